package dialect

import "testing"

// TestRereadable: the statements a failure may run again because they only read, and
// those it may not (a lock, INTO, an assignment, a function with effects, a stored
// function, several statements, an executable comment).
func TestRereadable(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want bool
	}{
		{"SELECT 1", true},
		{"select @@port", true},
		{"  /* a comment */ SELECT id FROM t WHERE id = ?", true},
		{"SELECT COUNT(*), MAX(id) FROM t GROUP BY k HAVING COUNT(*) > 1 ORDER BY 1 LIMIT 10", true},
		{"SELECT a FROM t WHERE id IN (1, 2) AND EXISTS (SELECT 1 FROM u WHERE u.id = t.id)", true},
		{"SELECT CAST(x AS CHAR(10)), CONVERT(y, DECIMAL(10,2)), NOW(), IFNULL(z, 0) FROM t", true},
		{"SELECT * FROM (SELECT id FROM t) AS s JOIN u USING (id)", true},
		{"SELECT ROW_NUMBER() OVER (PARTITION BY k ORDER BY id) FROM t", true},
		{"SELECT 'for update', `for`.x FROM `for`", true},
		{"SELECT 1;", true},
		{"SELECT id FROM t FOR UPDATE", false},
		{"SELECT id FROM t FOR SHARE", false},
		{"SELECT id FROM t LOCK IN SHARE MODE", false},
		{"SELECT id FROM t WHERE id = 1 FOR UPDATE SKIP LOCKED", false},
		{"SELECT id INTO @x FROM t", false},
		{"SELECT id FROM t INTO OUTFILE '/tmp/x'", false},
		{"SELECT @x := id FROM t", false},
		{"SELECT GET_LOCK('x', 1)", false},
		{"SELECT get_lock('x', 1)", false},
		{"SELECT RELEASE_LOCK('x')", false},
		{"SELECT SLEEP(1)", false},
		{"SELECT NEXTVAL(s)", false},
		{"SELECT NEXT VALUE FOR s", false},
		{"SELECT SETVAL(s, 10)", false},
		{"SELECT LAST_INSERT_ID(5)", false},
		{"SELECT my_function(1)", false},
		{"SELECT shop.count(1)", false},
		{"SELECT `count`(1)", false},
		{"SELECT 1; DELETE FROM t", false},
		{"SELECT /*! SQL_NO_CACHE */ 1", false},
		{"SELECT 'unterminated", false},
		{"(SELECT 1)", false},
		{"WITH c AS (SELECT 1) SELECT * FROM c", false},
		{"INSERT INTO t VALUES (1)", false},
		{"UPDATE t SET v = 1", false},
		{"DO 1", false},
		{"SHOW TABLES", false},
		{"", false},
	} {
		if got := Rereadable(tc.q); got != tc.want {
			t.Errorf("Rereadable(%q) = %v, want %v", tc.q, got, tc.want)
		}
	}
}
