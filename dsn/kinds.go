package dsn

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/hostaddr"
)

// kind is how the values of one type of option are written in a DSN: parse
// reads a value into the type of the option's Config field (int, bool,
// time.Duration or string), and format writes such a value back the way
// parse reads it.
type kind struct {
	doc    string // the type column of the Options table
	parse  func(k *kind, key, raw string) (any, error)
	format func(v any, redact bool) string
	// hide shows a non-empty value in a message instead of quoting it: a
	// secret is never shown, nor a URL that may hold credentials.
	hide func(raw string) string
	// raw: the value may be written with '/' unescaped (see split).
	raw bool

	// An enum's values, in the order messages list them, that list for
	// messages, and the explanation of a value that is none of them.
	values []string
	list   string
	bad    func(what, s, valid string) string
}

// show quotes raw, a value of this kind as written in the DSN, for a message.
func (k *kind) show(raw string) string {
	if raw == "" || k.hide == nil {
		return strconv.Quote(raw)
	}
	return k.hide(raw)
}

// invalid is the error for raw, a bad value of key: it names both (show: not a
// secret) and what was wanted.
func (k *kind) invalid(key, raw, want string) error {
	return newError(ErrInvalidOption, fmt.Sprintf("dsn: %s: invalid value %s: want %s", key, k.show(raw), want))
}

// The kinds of the options' values.
var (
	kindCount    = &kind{doc: "int >= 0", parse: parseInt("an integer >= 0"), format: formatInt}
	kindSeconds  = &kind{doc: "int >= 0", parse: parseInt("an integer number of seconds >= 0"), format: formatInt}
	kindBool     = &kind{doc: "bool", parse: parseBool, format: formatBool}
	kindDuration = &kind{doc: "duration", parse: parseDuration(`a duration >= 0 such as "5s" or "500ms"`, 0), format: formatDuration}
	// kindPositive is a duration > 0.
	kindPositive = &kind{doc: "duration > 0", parse: parseDuration(`a duration > 0 such as "1s" or "250ms"`, 1), format: formatDuration}
	// kindSize is bytes: a decimal integer >= 0, or with a KiB, MiB or GiB suffix.
	kindSize = &kind{doc: "size", parse: parseSizeValue, format: func(v any, _ bool) string { return formatSize(v.(int)) }}
	// kindLabel is a data-centre label (hostaddr.Label), which needs no escaping.
	kindLabel = &kind{doc: "dc label", parse: parseLabel, format: formatString}
	// kindURL is a URL, query-escaped (url.QueryUnescape); Validate checks it.
	kindURL = &kind{doc: "URL", parse: parseURL, format: formatURL, hide: showURL, raw: true}
	// kindSecret is a bearer token, %XX-escaped (url.PathUnescape); never shown.
	kindSecret = &kind{doc: "secret", parse: parseSecret, format: formatSecret, hide: func(string) string { return "(not shown)" }, raw: true}

	kindTarget    = enum(targets, targetList, badTarget)
	kindSelection = enum(selections, selectionList, badSelection)
	kindCausal    = enum(causalModes, causalList, badCausal)
	kindCluster   = enum(clusterTypes, clusterList, badCluster)
)

// parseInt reads a decimal integer >= 0 (want says so in the error).
func parseInt(want string) func(k *kind, key, raw string) (any, error) {
	return func(k *kind, key, raw string) (any, error) {
		if !isDigits(raw) {
			return nil, k.invalid(key, raw, want)
		}
		n, err := strconv.Atoi(raw)
		if err != nil {
			return nil, k.invalid(key, raw, want+" that fits an int")
		}
		return n, nil
	}
}

func parseBool(k *kind, key, raw string) (any, error) {
	b, err := strconv.ParseBool(raw)
	if err != nil {
		return nil, k.invalid(key, raw, "true or false (or 1, 0)")
	}
	return b, nil
}

// parseDuration reads a time.ParseDuration value of at least least (0 or 1).
func parseDuration(want string, least time.Duration) func(k *kind, key, raw string) (any, error) {
	return func(k *kind, key, raw string) (any, error) {
		d, err := time.ParseDuration(raw)
		if err != nil || d < least {
			return nil, k.invalid(key, raw, want)
		}
		return d, nil
	}
}

func parseSizeValue(k *kind, key, raw string) (any, error) {
	n, ok := parseSize(raw)
	if !ok {
		return nil, k.invalid(key, raw, `a size in bytes >= 0 such as "1048576", "512KiB" or "1MiB"`)
	}
	return n, nil
}

func parseLabel(k *kind, key, raw string) (any, error) {
	if hostaddr.Label(raw) != "" {
		return nil, k.invalid(key, raw, "a dc label, "+hostaddr.LabelRule)
	}
	return raw, nil
}

// parseURL unescapes a URL; Validate checks the URL itself, for hand-built
// Configs too.
func parseURL(k *kind, key, raw string) (any, error) {
	u, err := url.QueryUnescape(raw)
	if raw == "" {
		return nil, k.invalid(key, raw, `an http(s) URL such as "https://cfg.example/hosts.json"`)
	}
	if err != nil {
		return nil, k.invalid(key, raw, "a URL, query-escaped as by url.QueryEscape (bad %-escape)")
	}
	return u, nil
}

// parseSecret unescapes a bearer token: '+' stays '+', as a token has no
// blanks. Validate checks the token itself.
func parseSecret(k *kind, key, raw string) (any, error) {
	t, err := url.PathUnescape(raw)
	if raw == "" {
		return nil, k.invalid(key, raw, hostaddr.TokenRule)
	}
	if err != nil {
		return nil, k.invalid(key, raw, "a bearer token, written as is or %XX-escaped (bad %-escape)")
	}
	return t, nil
}

func formatInt(v any, _ bool) string      { return strconv.Itoa(v.(int)) }
func formatBool(v any, _ bool) string     { return strconv.FormatBool(v.(bool)) }
func formatDuration(v any, _ bool) string { return v.(time.Duration).String() } // parses back exactly
func formatString(v any, _ bool) string   { return v.(string) }

// formatURL escapes a HostsURL, whose query, fragment and user info String
// shows as "xxxxx" (redactURL).
func formatURL(v any, redact bool) string {
	u := v.(string)
	if redact {
		u = redactURL(u)
	}
	return url.QueryEscape(u)
}

// formatSecret escapes a HostsToken, which String shows as "xxxxx".
func formatSecret(v any, redact bool) string {
	t := v.(string)
	if redact {
		t = redacted
	}
	return url.QueryEscape(t)
}

// enum is the kind of an option whose value is one of values (which need no
// escaping); list names them for messages, and bad explains a value that is
// none of them after what, a message's start, with valid the accepted values.
func enum(values []string, list string, bad func(what, s, valid string) string) *kind {
	return &kind{doc: "enum", parse: parseEnum, format: formatString, values: values, list: list, bad: bad}
}

func parseEnum(k *kind, key, raw string) (any, error) {
	if !slices.Contains(k.values, raw) {
		return nil, newError(ErrInvalidOption, k.bad(fmt.Sprintf("dsn: %s: invalid value %q", key, raw), raw, k.list))
	}
	return raw, nil
}

// isDigits rejects the signs and blanks strconv.Atoi would accept or trip on.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// parseSize reads a size in bytes: decimal digits, optionally followed by KiB, MiB or
// GiB (1024, 1024^2, 1024^3), as FormatDSN writes it; ok is false for anything else,
// and for a size that does not fit an int.
func parseSize(raw string) (n int, ok bool) {
	mult := 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if d, found := strings.CutSuffix(raw, u.suffix); found {
			raw, mult = d, u.mult
			break
		}
	}
	if !isDigits(raw) {
		return 0, false
	}
	v, err := strconv.Atoi(raw)
	if err != nil || v > math.MaxInt/mult {
		return 0, false
	}
	return v * mult, true
}

// formatSize writes n as parseSize reads it, with the largest suffix that divides it.
func formatSize(n int) string {
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.Itoa(n/u.mult) + u.suffix
		}
	}
	return strconv.Itoa(n)
}

// The values of the enum options other than TargetSessionAttrs (whose values
// package internal/attrs names): Config.ReplicaSelection, Config.CausalReads
// and Config.Cluster, plain strings, "" meaning the first of each.
const (
	selectRoundRobin    = "round-robin"
	selectLeastInFlight = "least-in-flight"
	causalNone          = "none"
	causalLocal         = "local"
	causalGlobal        = "global"

	clusterAuto        = "auto"
	clusterReplication = "replication"
	clusterGalera      = "galera"
	clusterGroup       = "group"
)

// The values of each enum, in the order messages list them, and that list for
// messages.
var (
	targets      = attrs.All
	selections   = []string{selectRoundRobin, selectLeastInFlight}
	causalModes  = []string{causalNone, causalLocal, causalGlobal}
	clusterTypes = []string{clusterAuto, clusterReplication, clusterGalera, clusterGroup}
)

const (
	targetList    = "any, read-write, read-only, primary, standby, prefer-standby"
	selectionList = "round-robin or least-in-flight"
	causalList    = "none, local or global"
	clusterList   = "auto, replication, galera or group"
)

// targetNearMiss returns the one of targets s differs from only in case, in
// '_' or blanks for '-', or in leaving the '-' out ("read_write", "Primary",
// "preferstandby"), or "".
func targetNearMiss(s string) string { return valueNearMiss(s, targets) }

// valueNearMiss returns the one of values that s differs from only in case,
// in '_' or blanks for '-', or in leaving the '-' out, or "".
func valueNearMiss(s string, values []string) string {
	norm := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '-' || r == '_' || r == ' ' {
				return -1
			}
			return r
		}, strings.ToLower(s))
	}
	n := norm(s)
	for _, v := range values {
		if norm(v) == n {
			return v
		}
	}
	return ""
}

// didYouMean is the message for a value that differs from v, one of the values valid
// lists, in spelling only, after what.
func didYouMean(what, v, valid string) string {
	return fmt.Sprintf("%s: did you mean %q? (values are case-sensitive: %s)", what, v, valid)
}

// badSelection explains why s is not a ReplicaSelection value, after what
// (as badTarget); valid lists the accepted values.
func badSelection(what, s, valid string) string {
	v := valueNearMiss(s, selections)
	if strings.EqualFold(s, "LEAST_CURRENT_OPERATIONS") {
		v = selectLeastInFlight // MaxScale's name for it
	}
	if v != "" {
		return didYouMean(what, v, valid)
	}
	return fmt.Sprintf("%s: want %s", what, valid)
}

// badCluster explains why s is not a Cluster value, after what (as
// badTarget); valid lists the accepted values. The products' names are
// understood: "pxc" (Percona XtraDB Cluster) and "wsrep" mean galera, "gr",
// "innodbcluster" and "group_replication" group.
func badCluster(what, s, valid string) string {
	v := valueNearMiss(s, clusterTypes)
	for _, t := range clusterTypes {
		if v == "" && len(s) >= 4 && editDistance(strings.ToLower(s), t) <= 2 {
			v = t
		}
	}
	switch strings.ToLower(strings.NewReplacer("_", "", "-", "", " ", "").Replace(s)) {
	case "pxc", "wsrep", "perconaxtradbcluster", "mariadbgalera", "galeracluster":
		v = clusterGalera
	case "gr", "groupreplication", "innodbcluster", "mysqlgroupreplication":
		v = clusterGroup
	case "async", "asynchronous", "primaryreplica", "masterslave", "sourcereplica":
		v = clusterReplication
	}
	if v != "" {
		return didYouMean(what, v, valid)
	}
	return fmt.Sprintf("%s: want %s", what, valid)
}

// badCausal explains why s is not a CausalReads value, after what (as
// badTarget); valid lists the accepted values.
func badCausal(what, s, valid string) string {
	if v := valueNearMiss(s, causalModes); v != "" {
		return didYouMean(what, v, valid)
	}
	switch strings.ToLower(s) {
	case "fast", "fast_global", "universal", "fast_universal":
		return fmt.Sprintf("%s: want %s (MaxScale's fast, fast_global, universal and fast_universal modes are not offered)", what, valid)
	}
	return fmt.Sprintf("%s: want %s", what, valid)
}

// badTarget explains why s is not a Config.TargetSessionAttrs value, after what
// ("dsn: targetSessionAttrs: invalid value "x"" or the like); valid lists
// the accepted values.
func badTarget(what, s, valid string) string {
	if t := targetNearMiss(s); t != "" {
		return didYouMean(what, t, valid)
	}
	return fmt.Sprintf("%s: want one of %s", what, valid)
}
