package cluster

// Host lists from outside: the built-in HTTPHostList provider and the rules every
// provided list must pass (ValidateHosts). SetHosts (topology.go) applies a list.

import (
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/hostaddr"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// ErrInvalidHostList is matched (errors.Is) by every error that rejects a host list's
// content rather than failing to fetch it: a list that ValidateHosts refuses and, from
// HTTPHostList, a response that is not exactly one JSON document of the expected form,
// or is larger than DefaultMaxHostListBytes.
var ErrInvalidHostList = errors.New("mysqlfailover: invalid host list")

// invalidListError is an ErrInvalidHostList with its reason and, for a provider's list,
// where the list came from.
type invalidListError struct {
	src    string // the provider ("" for ValidateHosts)
	reason string
}

func (e *invalidListError) Error() string {
	if e.src == "" {
		return ErrInvalidHostList.Error() + ": " + e.reason
	}
	return ErrInvalidHostList.Error() + " from " + e.src + ": " + e.reason
}

func (e *invalidListError) Is(target error) bool { return target == ErrInvalidHostList }

// HTTPHostList is the built-in HostListProvider: it GETs a JSON document over HTTPS (or
// plain HTTP to a loopback host, or anywhere when explicitly allowed) with an optional
// bearer token. The document is
//
//	{"hosts": [{"addr": "10.0.0.1:3306", "dc": "east"}, {"addr": "10.0.0.2:3306"}]}
//
// and is decoded strictly: unknown fields, trailing data after the document, a body
// larger than DefaultMaxHostListBytes and a list that ValidateHosts refuses are all errors
// (matching ErrInvalidHostList). "dc" may be omitted or "" for no label. The
// Content-Type of the response is not checked. Object keys are matched as
// encoding/json does, case-insensitively.
//
// Its errors, String and the URL they show never contain the token, nor the URL's query
// or fragment (which may hold a secret of their own); text that the server controls
// (quoted entries, JSON field names) has the token blanked out should it appear, and the
// body of a non-2xx response is never shown. It is immutable and safe for concurrent
// use.
type HTTPHostList struct {
	url     string // the full URL requested
	show    string // the URL without query and fragment, for String and errors
	token   string
	client  *http.Client
	display string // String()
}

var _ failover.HostListProvider = (*HTTPHostList)(nil)

// NewHTTPHostList returns a provider that GETs rawURL, sending "Authorization: Bearer
// <token>" when token is not "".
//
// rawURL must be an absolute http or https URL with a host and no user information
// (user:password@ is refused: give the credential as token). Plain http is accepted
// only to a loopback host (localhost, 127.0.0.0/8, ::1) unless allowHTTP is set, since
// it would send the token and receive the host list in clear. The token must be
// printable ASCII without blanks (0x21..0x7E).
//
// client nil means a client with DefaultHostListTimeout (5 s) and
// http.DefaultTransport. A given client is copied (its Transport, Jar and Timeout are
// used as they are). Either way redirects are followed only within the URL's origin
// (same scheme, host and port, at most 10): a redirect anywhere else is refused with an
// error, so the token never reaches another host. (net/http's own rule would forward
// the Authorization header to a sub-domain or to another port of the same host.) A
// given client's CheckRedirect runs after that check.
//
// Errors start with "mysqlfailover: " and never contain the token or the URL's user
// information.
func NewHTTPHostList(rawURL, token string, allowHTTP bool, client *http.Client) (*HTTPHostList, error) {
	u, reason := hostaddr.URL(rawURL, allowHTTP)
	if reason != "" {
		return nil, errors.New("mysqlfailover: host list URL: " + reason)
	}
	if reason := hostaddr.Token(token); token != "" && reason != "" {
		return nil, errors.New("mysqlfailover: host list token: " + reason + ": want " + hostaddr.TokenRule)
	}
	show := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
	var c http.Client
	if client != nil {
		c = *client
	} else {
		c.Timeout = DefaultHostListTimeout
	}
	origin := hlOrigin(u)
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if o := hlOrigin(req.URL); o != origin {
			return fmt.Errorf("redirect to %s refused: only redirects within %s are followed, so that the token stays there", o, origin)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= DefaultMaxHostListRedirects {
			return fmt.Errorf("stopped after %d redirects", DefaultMaxHostListRedirects)
		}
		return nil
	}
	display := show
	if u.RawQuery != "" || u.ForceQuery {
		display += "?..."
	}
	return &HTTPHostList{url: u.String(), show: display, token: token, client: &c, display: "HTTPHostList(" + display + ")"}, nil
}

// String returns "HTTPHostList(URL)", the URL without its query and fragment ("?..."
// marks a query left out), e.g. "HTTPHostList(https://cfg.example/hosts.json)". It
// never shows the token.
func (p *HTTPHostList) String() string { return p.display }

// CloseIdleConnections closes the idle connections of the provider's transport (the
// given client's, or http.DefaultTransport's), as http.Client.CloseIdleConnections.
func (p *HTTPHostList) CloseIdleConnections() { p.client.CloseIdleConnections() }

// Hosts implements HostListProvider: one GET, bounded by ctx and the client's timeout.
// A non-2xx status is an error naming the status code (the body is not shown). A body
// that is not exactly one JSON document of the form in HTTPHostList's description,
// that is larger than DefaultMaxHostListBytes, or whose list ValidateHosts refuses, is an
// error matching ErrInvalidHostList. A transport failure, including the end of ctx
// (errors.Is context.Canceled or context.DeadlineExceeded) and a refused redirect, is
// returned wrapped. Errors start with "mysqlfailover: host list URL" or
// "mysqlfailover: invalid host list from URL" and never contain the token.
func (p *HTTPHostList) Hosts(ctx context.Context) ([]failover.ProvidedHost, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return nil, fmt.Errorf("mysqlfailover: host list %s: %w", p.show, err)
	}
	req.Header.Set("Accept", "application/json")
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		// url.Error repeats the URL, query included: keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("mysqlfailover: host list %s: %w", p.show, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Drain a little so that the connection may be reused; the body is not shown.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		text := http.StatusText(resp.StatusCode)
		if text != "" {
			text = " " + text
		}
		return nil, fmt.Errorf("mysqlfailover: host list %s: HTTP status %d%s", p.show, resp.StatusCode, text)
	}
	if resp.ContentLength > DefaultMaxHostListBytes {
		return nil, p.invalid(fmt.Sprintf("response of %d bytes: the limit is %d (1 MiB)", resp.ContentLength, DefaultMaxHostListBytes))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, DefaultMaxHostListBytes+1))
	if err != nil {
		return nil, fmt.Errorf("mysqlfailover: host list %s: reading the response: %w", p.show, err)
	}
	if len(body) > DefaultMaxHostListBytes {
		return nil, p.invalid(fmt.Sprintf("response larger than %d bytes (1 MiB)", DefaultMaxHostListBytes))
	}
	hosts, reason := decodeHostList(body)
	if reason == "" {
		reason = validateHostList(hosts)
	}
	if reason != "" {
		return nil, p.invalid(reason)
	}
	return hosts, nil
}

// invalid returns an ErrInvalidHostList error with the token, should the server have
// put it in the reason, blanked out.
func (p *HTTPHostList) invalid(reason string) error {
	if p.token != "" {
		reason = strings.ReplaceAll(reason, p.token, "[token]")
	}
	return &invalidListError{src: p.show, reason: reason}
}

// wireHostList is the JSON document HTTPHostList accepts.
type wireHostList struct {
	Hosts []wireHost `json:"hosts"`
}

type wireHost struct {
	Addr string `json:"addr"`
	DC   string `json:"dc"`
}

// decodeHostList decodes exactly one JSON document from body, strictly. It returns a
// reason instead of an error.
func decodeHostList(body []byte) ([]failover.ProvidedHost, string) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, `empty response: want {"hosts": [{"addr": "host:port", "dc": "label"}, ...]}`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var doc wireHostList
	if err := dec.Decode(&doc); err != nil {
		return nil, `not a JSON document of the form {"hosts": [{"addr": "host:port", "dc": "label"}, ...]}: ` + hlJSONReason(err)
	}
	end := int(dec.InputOffset())
	if rest := bytes.TrimLeft(body[end:], " \t\r\n"); len(rest) > 0 {
		return nil, fmt.Sprintf("data after the JSON document (at byte %d)", len(body)-len(rest)+1)
	}
	hosts := make([]failover.ProvidedHost, len(doc.Hosts))
	for i, h := range doc.Hosts {
		hosts[i] = failover.ProvidedHost{Addr: h.Addr, DC: h.DC}
	}
	return hosts, ""
}

// hlJSONReason rewords encoding/json's errors without this package's type names, and
// caps what the server controls (unknown field names).
func hlJSONReason(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := "the document"
		if te.Field != "" {
			where = hlQuote(te.Field)
		}
		return fmt.Sprintf("%s is a JSON %s (at byte %d)", where, te.Value, te.Offset)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "truncated JSON"
	}
	return hlShorten(err.Error())
}

// ValidateHosts checks a provided list: it must not be empty; every Addr must be
// host:port with a port in 1..65535 (a missing port is an error), an IPv6 literal in
// brackets (and brackets only around one), and no blank, control character or any of
// `,@/()[];=` in the name, as package dsn's host rules; every DC "" or a valid label
// (1..64 bytes of A-Z a-z 0-9 '.' '_' '-'); no two entries the same address (names
// compared case-insensitively, IP literals in canonical form, an IPv4-mapped IPv6
// address as its IPv4 address; DC labels not considered).
//
// The error matches ErrInvalidHostList, names the offending entry (1-based, and for a
// duplicate the entry it repeats) and quotes nothing but that entry, at most 100 bytes
// of each field.
func ValidateHosts(hosts []failover.ProvidedHost) error {
	if reason := validateHostList(hosts); reason != "" {
		return &invalidListError{reason: reason}
	}
	return nil
}

// validateHostList is ValidateHosts, returning a reason instead of an error.
func validateHostList(hosts []failover.ProvidedHost) string {
	if len(hosts) == 0 {
		return "no hosts: the list must name at least one"
	}
	seen := make(map[string]int, len(hosts))
	for i, h := range hosts {
		key, reason := hostAddrKey(h.Addr)
		if reason == "" && h.DC != "" {
			if reason = hostaddr.Label(h.DC); reason != "" {
				reason += ": want " + hostaddr.LabelRule
			}
		}
		if reason != "" {
			return hlEntry(i, h) + ": " + reason
		}
		if j, dup := seen[key]; dup {
			return fmt.Sprintf("%s: duplicate of entry %d", hlEntry(i, h), j+1)
		}
		seen[key] = i
	}
	return ""
}

// hlEntry names hosts[i] for an error: "entry 2 (addr "db1:3306", dc "east")".
func hlEntry(i int, h failover.ProvidedHost) string {
	s := "entry " + strconv.Itoa(i+1) + " (addr " + hlQuote(h.Addr)
	if h.DC != "" {
		s += ", dc " + hlQuote(h.DC)
	}
	return s + ")"
}

// hlOrigin returns u's scheme://host:port, lower-cased, with the scheme's default port
// filled in.
func hlOrigin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// hlQuote quotes s for an error, at most DefaultMaxEcho bytes of it.
func hlQuote(s string) string {
	if len(s) > DefaultMaxEcho {
		return strconv.Quote(s[:DefaultMaxEcho]) + "..."
	}
	return strconv.Quote(s)
}

// hlShorten shortens a message from elsewhere to a few times DefaultMaxEcho bytes.
func hlShorten(s string) string {
	if len(s) > 3*DefaultMaxEcho {
		return s[:3*DefaultMaxEcho] + "..."
	}
	return s
}

// hostAddrKey parses a provided host:port (hostaddr.Split, the port required) and
// returns its duplicate-detection key (hostaddr.Key), or a reason it is invalid.
func hostAddrKey(addr string) (key, reason string) {
	name, port, reason := hostaddr.Split(addr, true)
	if reason != "" {
		return "", reason
	}
	if ip, err := netip.ParseAddr(name); addr[0] == '[' && (err != nil || !ip.Is6()) {
		return "", `brackets must enclose an IPv6 address, as in "[::1]:3306"`
	}
	return hostaddr.Key(name, port), ""
}
