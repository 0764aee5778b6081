package dialect

import (
	"strings"
	"testing"
)

// The session state a replay cannot see: statements that read or set user variables,
// named locks and temporary tables, outside quotes and comments.
func TestSessionState(t *testing.T) {
	for q, want := range map[string]string{
		"SELECT 1":                                    "",
		"SELECT 'a@b.com', \"x@y\", `c@d`":            "",
		"SELECT @@autocommit, @@session.sql_mode":     "",
		"SELECT 1 -- @x\n":                            "",
		"SELECT 1 /* @x */":                           "",
		"SELECT /*! @x */ 1":                          "user variable (@x)",
		"SET @x = 1":                                  "user variable (@x)",
		"SELECT a INTO @v FROM t":                     "user variable (@v)",
		"SELECT @`quoted`":                            "user variable",
		"select get_lock('a', 0)":                     "GET_LOCK",
		"SELECT GET_LOCK ('a', 0)":                    "GET_LOCK",
		"SELECT my_get_lock('a')":                     "",
		"SELECT 'get_lock(x)'":                        "",
		"create temporary table t (a int)":            "temporary table",
		"CREATE OR REPLACE TEMPORARY TABLE t (a INT)": "temporary table",
		"/* x */ DROP TEMPORARY TABLE t":              "temporary table",
		"CREATE TABLE t (a INT)":                      "",
		// read to the end: a comment between GET_LOCK and its '(' (the server takes
		// it), a string the server ends at its backslash (NO_BACKSLASH_ESCAPES)
		"SELECT GET_LOCK/* c */('a', 0)":  "GET_LOCK",
		"SELECT GET_LOCK -- c\n('a', 0)":  "GET_LOCK",
		"SELECT GET_LOCK /*! */ ('a', 0)": "GET_LOCK",
		`SELECT 'C:\', @x := 1`:           "user variable (@x)",
		`SELECT 'C:\', GET_LOCK('a', 0)`:  "GET_LOCK",
	} {
		got := SessionState(q, false)
		if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("SessionState(%q) = %q, want %q", q, got, want)
		}
	}
	// With multiStatements every statement of a batch is read; without, only the first
	// exists for the server.
	for _, multi := range []bool{true, false} {
		q := "SELECT 1; /* c */ CREATE TEMPORARY TABLE tmp (a INT)"
		if got := SessionState(q, multi); multi != strings.Contains(got, "temporary table") {
			t.Errorf("SessionState(%q, multi=%v) = %q", q, multi, got)
		}
	}
}

func TestParseUse(t *testing.T) {
	for _, tc := range []struct {
		q    string
		db   string
		isDB bool
	}{
		{"USE shop", "shop", true},
		{"use shop", "shop", true},
		{"uSe shop;", "shop", true},
		{"  \t\r\nUSE   shop  ", "shop", true},
		{"USE\tshop", "shop", true},
		{"USE\nshop -- comment", "shop", true},
		{"USE `my shop`", "my shop", true},
		{"USE `a``b`", "a`b", true},
		{"USE `a````b`;", "a``b", true},
		{"USE`shop`", "shop", true},
		{"USE `unterminated", "", false},
		{"USE ``", "", false},
		{"USE", "", false},
		{"USE ", "", false},
		{"USE ;", "", false},
		{"USER shop", "", false},
		{"USERS", "", false},
		{"UPDATE t SET a = 1", "", false},
		{"SELECT 'USE x'", "", false},
		{"/* c */ USE shop", "shop", true},
		{"USE /*c*/ shop", "shop", true}, // the server reads it so (MariaDB 10.11)
		{"USE shop/*c*/", "shop", true},
		{"USE -- c\n`my shop` # c", "my shop", true},
		{`USE "shop"`, "shop", true}, // it succeeds only under ANSI_QUOTES
		{"USE /*!shop*/", "", false},
		{"USE shop junk", "", false},
		{"USE 'shop'", "", false},
		{"USE sh$op_2", "sh$op_2", true},
		{"USE bücher", "bücher", true},
		{"", "", false},
	} {
		db, isDB := ParseUse(tc.q)
		if db != tc.db || isDB != tc.isDB {
			t.Errorf("ParseUse(%q) = %q, %v; want %q, %v", tc.q, db, isDB, tc.db, tc.isDB)
		}
	}
}
