package dialect_test

import (
	"database/sql/driver"
	"math"
	"testing"

	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// go-sql-driver returns MariaDB's @@in_transaction (UNSIGNED BIGINT) as uint64 and
// @@autocommit (BIGINT) as int64: internal/conn's resolve and timeoutEnded read both
// (sqlmock turns a scripted uint64 into int64, so their scripts cannot show it). NULL is
// "" (what conn reads as no answer); another type is written as fmt.Sprint writes it
// (what internal/cluster's readers quote in their reasons).
func TestText(t *testing.T) {
	for _, tc := range []struct {
		v    driver.Value
		want string
	}{
		{uint64(0), "0"}, {uint64(1), "1"}, {int64(1), "1"}, {int64(12), "12"}, {[]byte("ON"), "ON"}, {"CHAIN", "CHAIN"}, {nil, ""},
		{uint64(math.MaxUint64), "18446744073709551615"}, {int64(-3), "-3"}, {1.5, "1.5"}, {true, "true"},
	} {
		if got := dialect.Text(tc.v); got != tc.want {
			t.Errorf("Text(%T %v) = %q, want %q", tc.v, tc.v, got, tc.want)
		}
	}
}

// Int reads the integer types of both protocols and decimal text; a uint64 beyond
// int64 saturates (a lag that large is "very far behind", not an error).
func TestInt(t *testing.T) {
	for _, tc := range []struct {
		v    driver.Value
		want int64
		ok   bool
	}{
		{int64(7), 7, true}, {int64(-1), -1, true}, {uint64(42), 42, true},
		{uint64(math.MaxUint64), math.MaxInt64, true}, {[]byte("120"), 120, true}, {"-5", -5, true},
		{nil, 0, false}, {1.5, 0, false}, {[]byte("1.5"), 0, false}, {"", 0, false}, {"x", 0, false},
		{"99999999999999999999", math.MaxInt64, false},
	} {
		got, ok := dialect.Int(tc.v)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("Int(%T %v) = %d, %v; want %d, %v", tc.v, tc.v, got, ok, tc.want, tc.ok)
		}
	}
}
