package dialect

// Which failed statements are reads that may run again (failover.FailoverError.Read). A
// read that failed may have run on the host that failed, but running it again changes
// nothing, so mysqlfailover.SafeToRetry says RetryStatement for it. The rule is narrow
// on purpose: when in doubt, a statement is not a read, and the caller reads the data
// first as after any other statement that may have run.

// Rereadable reports whether query is a read that may run again after it failed: one
// SELECT statement (a trailing ';' allowed; not a multi-statement batch, not a WITH or
// a parenthesised query) without a locking clause (FOR UPDATE, FOR SHARE, LOCK IN SHARE
// MODE: no FOR or LOCK anywhere, which also leaves out NEXT VALUE FOR and FOR
// SYSTEM_TIME), without INTO (OUTFILE, DUMPFILE, variables), without an assignment
// (@v := ...), and whose every call is to a built-in function without effects
// (readFunctions): a stored function, which may write, is not recognised as such
// (qualified, backquoted or unknown), nor GET_LOCK, SLEEP, NEXTVAL, SETVAL or
// LAST_INSERT_ID, nor an executable comment. Whether a transaction is open is the
// caller's to know: inside one nothing is a read that may run alone.
//
// It runs only on a failure, never on a statement's path.
func Rereadable(query string) bool {
	l := lexer{s: query}
	if !is(l.word(), "select") || l.bad {
		return false
	}
	prev := "select"
	for {
		if l.peek() == ';' {
			return l.end() && !l.bad // one trailing ';' and nothing after it
		}
		tok := l.token()
		switch {
		case l.bad:
			return false
		case tok == "":
			return true
		case tok == ":=":
			return false
		case isIdentByte(tok[0]):
			if is(tok, "for") || is(tok, "lock") || is(tok, "into") {
				return false
			}
			if l.peek() == '(' && (prev == "." || !callable(tok)) {
				return false // a qualified name is a stored function; an unknown one may be
			}
		case tok[0] == '`' && l.peek() == '(':
			return false // a backquoted name called: a stored function
		}
		prev = tok
	}
}

// callable reports whether w, a word followed by '(', is a built-in function without
// effects or a keyword that a parenthesis may follow in a SELECT, in any ASCII case.
func callable(w string) bool {
	var buf [24]byte
	if len(w) > len(buf) {
		return false
	}
	for i := 0; i < len(w); i++ {
		b := w[i]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		buf[i] = b
	}
	return readFunctions[string(buf[:len(w)])]
}

// readFunctions are the names that may precede '(' in a read: the keywords of a SELECT
// that a parenthesis follows (IN, EXISTS, a subquery's FROM or JOIN, OVER, a CAST's
// type...) and MariaDB's and MySQL's built-in functions that change nothing (aggregates,
// window functions, string, numeric, date, JSON, comparison and information functions).
// A function that is not here (a stored function, GET_LOCK, RELEASE_LOCK, SLEEP,
// BENCHMARK, NEXTVAL, SETVAL, LASTVAL, LAST_INSERT_ID, MASTER_POS_WAIT,
// MASTER_GTID_WAIT, LOAD_FILE, and any this list misses) makes a statement not a read.
var readFunctions = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range []string{
		// keywords
		"select", "from", "join", "where", "on", "using", "as", "over", "in", "exists", "any",
		"all", "some", "and", "or", "not", "xor", "by", "when", "then", "else", "case",
		"between", "like", "rlike", "regexp", "is", "interval", "distinct", "having", "union",
		"except", "intersect", "partition", "against", "match", "row", "div", "escape",
		"binary", "values", "lateral", "index", "key", "columns", "nested", "path", "with",
		// the types of CAST and CONVERT
		"char", "varchar", "nchar", "decimal", "dec", "numeric", "float", "double", "real",
		"time", "datetime", "timestamp", "date", "year", "signed", "unsigned", "integer",
		// aggregates and window functions
		"count", "sum", "avg", "min", "max", "group_concat", "json_arrayagg", "json_objectagg",
		"std", "stddev", "stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp",
		"bit_and", "bit_or", "bit_xor", "row_number", "rank", "dense_rank", "percent_rank",
		"cume_dist", "ntile", "lag", "lead", "first_value", "last_value", "nth_value",
		"median", "percentile_cont", "percentile_disc",
		// comparison and control flow
		"if", "ifnull", "nullif", "coalesce", "greatest", "least", "isnull", "nvl", "nvl2",
		"cast", "convert",
		// strings
		"concat", "concat_ws", "length", "char_length", "character_length", "octet_length",
		"bit_length", "lower", "upper", "lcase", "ucase", "substring", "substr", "mid",
		"substring_index", "left", "right", "trim", "ltrim", "rtrim", "replace", "reverse",
		"repeat", "lpad", "rpad", "locate", "position", "instr", "field", "find_in_set",
		"format", "hex", "unhex", "md5", "sha", "sha1", "sha2", "crc32", "ascii", "ord",
		"space", "strcmp", "insert", "quote", "soundex", "to_base64", "from_base64", "elt",
		"export_set", "make_set", "regexp_replace", "regexp_substr", "regexp_instr",
		"regexp_like", "collation", "charset", "weight_string", "natural_sort_key",
		// numbers
		"abs", "ceil", "ceiling", "floor", "round", "truncate", "mod", "pow", "power", "sqrt",
		"exp", "ln", "log", "log2", "log10", "sign", "pi", "rand", "degrees", "radians",
		"sin", "cos", "tan", "asin", "acos", "atan", "atan2", "cot", "conv", "bin", "oct",
		"bit_count",
		// dates
		"now", "curdate", "curtime", "current_date", "current_time", "current_timestamp",
		"localtime", "localtimestamp", "sysdate", "utc_date", "utc_time", "utc_timestamp",
		"month", "day", "dayofmonth", "dayofweek", "dayofyear", "week", "weekday",
		"weekofyear", "yearweek", "hour", "minute", "second", "microsecond", "quarter",
		"monthname", "dayname", "date_add", "date_sub", "adddate", "subdate", "addtime",
		"subtime", "datediff", "timediff", "timestampdiff", "timestampadd", "date_format",
		"time_format", "str_to_date", "from_unixtime", "unix_timestamp", "convert_tz",
		"extract", "last_day", "makedate", "maketime", "period_add", "period_diff",
		"to_days", "from_days", "to_seconds", "sec_to_time", "time_to_sec", "get_format",
		// JSON
		"json_extract", "json_unquote", "json_object", "json_array", "json_contains",
		"json_contains_path", "json_length", "json_keys", "json_value", "json_query",
		"json_valid", "json_type", "json_depth", "json_search", "json_set", "json_insert",
		"json_replace", "json_remove", "json_merge", "json_merge_patch",
		"json_merge_preserve", "json_quote", "json_compact", "json_detailed", "json_pretty",
		"json_exists", "json_overlaps", "json_table", "json_array_append",
		"json_array_insert",
		// information and identifiers
		"database", "schema", "user", "current_user", "session_user", "system_user",
		"version", "connection_id", "found_rows", "row_count", "uuid", "uuid_short",
		"inet_aton", "inet_ntoa", "inet6_aton", "inet6_ntoa", "is_ipv4", "is_ipv6",
		"bin_to_uuid", "uuid_to_bin", "default",
	} {
		m[w] = true
	}
	return m
}()
