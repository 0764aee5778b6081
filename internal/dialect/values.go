package dialect

import (
	"database/sql/driver"
	"fmt"
	"math"
	"strconv"
)

// Text returns a column value as text: the text protocol's []byte or a string as it
// is, and an integer in decimal (go-sql-driver returns int64 for integer columns, and
// uint64 for an unsigned BIGINT such as MariaDB's @@in_transaction). NULL is "". Any
// other type is written as fmt.Sprint writes it.
func Text(v driver.Value) string {
	switch v := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(v)
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	}
	return fmt.Sprint(v)
}

// Int returns a column value as an integer: an int64 as it is, a uint64 saturated at
// math.MaxInt64, and the decimal text of a []byte or a string. ok is false for NULL,
// for another type, and for text that is not a decimal int64.
func Int(v driver.Value) (n int64, ok bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case uint64:
		return int64(min(v, math.MaxInt64)), true
	case []byte, string:
		n, err := strconv.ParseInt(Text(v), 10, 64)
		return n, err == nil
	}
	return 0, false
}
