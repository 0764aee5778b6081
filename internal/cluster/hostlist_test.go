package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

// hlToken is the marker token: no error, String or log may contain it.
const hlToken = "SeCrEt-T0KEN-marker-7f3a"

// hlCheckErr fails the test if err is nil, lacks the package prefix, or carries the token.
func hlCheckErr(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("want an error, got nil")
	}
	if !strings.HasPrefix(err.Error(), "mysqlfailover: ") {
		t.Errorf("error %q lacks the mysqlfailover: prefix", err)
	}
	if strings.Contains(err.Error(), hlToken) {
		t.Errorf("error carries the token: %q", err)
	}
}

// hlServer serves body (with status) and records the Authorization headers it saw.
type hlServer struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func (s *hlServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auths...)
}

func hlServe(t *testing.T, tls bool, status int, body string) *hlServer {
	t.Helper()
	s := &hlServer{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.auths = append(s.auths, r.Header.Get("Authorization"))
		s.mu.Unlock()
		if r.Method != http.MethodGet {
			t.Errorf("method %s, want GET", r.Method)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	})
	if tls {
		s.Server = httptest.NewTLSServer(h)
	} else {
		s.Server = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s
}

// hlProvider builds a provider for srv (its own client for TLS, nil for plain http).
func hlProvider(t *testing.T, srv *httptest.Server, path, token string) *cluster.HTTPHostList {
	t.Helper()
	var client *http.Client
	if srv.TLS != nil {
		client = srv.Client()
	}
	p, err := cluster.NewHTTPHostList(srv.URL+path, token, false, client)
	if err != nil {
		t.Fatalf("NewHTTPHostList: %v", err)
	}
	t.Cleanup(p.CloseIdleConnections)
	return p
}

func hlCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestHTTPHostListGood(t *testing.T) {
	const doc = `{"hosts": [{"addr": "10.0.0.1:3306", "dc": "east"}, {"addr": "10.0.0.2:3306"}, {"addr": "[::1]:3307", "dc": ""}, {"addr": "db4.example:3306", "dc": "west-2_a.b"}]}` + "\n"
	want := []failover.ProvidedHost{
		{Addr: "10.0.0.1:3306", DC: "east"},
		{Addr: "10.0.0.2:3306"},
		{Addr: "[::1]:3307"},
		{Addr: "db4.example:3306", DC: "west-2_a.b"},
	}
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tls), func(t *testing.T) {
			srv := hlServe(t, tls, http.StatusOK, doc)
			p := hlProvider(t, srv.Server, "/hosts.json", hlToken)
			for range 2 { // a second poll reuses the provider
				got, err := p.Hosts(hlCtx(t))
				if err != nil {
					t.Fatalf("Hosts: %v", err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("Hosts = %+v, want %+v", got, want)
				}
			}
		})
	}
}

func TestHTTPHostListToken(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tls), func(t *testing.T) {
			srv := hlServe(t, tls, http.StatusOK, `{"hosts":[{"addr":"db1:3306"}]}`)
			if _, err := hlProvider(t, srv.Server, "/", hlToken).Hosts(hlCtx(t)); err != nil {
				t.Fatal(err)
			}
			if _, err := hlProvider(t, srv.Server, "/", "").Hosts(hlCtx(t)); err != nil {
				t.Fatal(err)
			}
			want := []string{"Bearer " + hlToken, ""}
			if got := srv.seen(); !reflect.DeepEqual(got, want) {
				t.Fatalf("Authorization headers %q, want %q", got, want)
			}
		})
	}
}

func TestHTTPHostListString(t *testing.T) {
	p, err := cluster.NewHTTPHostList("https://cfg.example/hosts.json?sig="+hlToken+"#frag", hlToken, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.String(), "HTTPHostList(https://cfg.example/hosts.json?...)"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
	if got := fmt.Sprintf("%v %+v %s", p, p, p); strings.Contains(got, hlToken) {
		t.Fatalf("formatting shows the token: %q", got)
	}
	p, err = cluster.NewHTTPHostList("https://cfg.example/hosts.json", hlToken, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.String(), "HTTPHostList(https://cfg.example/hosts.json)"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
}

// TestHTTPHostListInvalid: every response that is not a valid list is refused with
// ErrInvalidHostList, naming the problem (and the entry), never the token.
func TestHTTPHostListInvalid(t *testing.T) {
	big := `{"hosts":[{"addr":"db1:3306"}]}` + strings.Repeat(" ", cluster.DefaultMaxHostListBytes)
	for _, c := range []struct {
		name, body, want string
	}{
		{"unknown top field", `{"hosts":[{"addr":"db1:3306"}],"extra":1}`, `unknown field "extra"`},
		{"unknown entry field", `{"hosts":[{"addr":"db1:3306","weight":2}]}`, `unknown field "weight"`},
		{"empty list", `{"hosts":[]}`, "no hosts"},
		{"no list", `{}`, "no hosts"},
		{"null", `null`, "no hosts"},
		{"null list", `{"hosts":null}`, "no hosts"},
		{"empty body", ``, "empty response"},
		{"blank body", " \n", "empty response"},
		{"bad addr", `{"hosts":[{"addr":"db1:3306"},{"addr":"db 2:3306"}]}`, `entry 2 (addr "db 2:3306"): host name contains the blank`},
		{"missing port", `{"hosts":[{"addr":"db1:3306"},{"addr":"db2"}]}`, `entry 2 (addr "db2"): missing port`},
		{"missing addr", `{"hosts":[{"dc":"east"}]}`, `entry 1 (addr "", dc "east"): empty addr`},
		{"duplicate", `{"hosts":[{"addr":"db1:3306"},{"addr":"db2:3306"},{"addr":"DB1:3306","dc":"east"}]}`, `entry 3 (addr "DB1:3306", dc "east"): duplicate of entry 1`},
		{"bad label", `{"hosts":[{"addr":"db1:3306","dc":"east coast"}]}`, `entry 1 (addr "db1:3306", dc "east coast"): dc label "east coast" contains ' '`},
		{"trailing garbage", `{"hosts":[{"addr":"db1:3306"}]} xyz`, "data after the JSON document (at byte 33)"},
		{"trailing bracket", "{\"hosts\":[{\"addr\":\"db1:3306\"}]}\r\n\t]", "data after the JSON document (at byte 35)"},
		{"second document", `{"hosts":[{"addr":"db1:3306"}]}{"hosts":[{"addr":"db2:3306"}]}`, "data after the JSON document (at byte 32)"},
		{"not JSON", `<html>oops</html>`, "not a JSON document"},
		{"truncated", `{"hosts":[{"addr":"db1:3306"}`, "truncated JSON"},
		{"wrong type", `{"hosts":{"addr":"db1:3306"}}`, `"hosts" is a JSON object`},
		{"array document", `[{"addr":"db1:3306"}]`, "the document is a JSON array"},
		{"oversize", big, "larger than 1048576 bytes"},
		{"token as addr", `{"hosts":[{"addr":"` + hlToken + `:3306"},{"addr":"` + hlToken + `"}]}`, `entry 2 (addr "[token]"): missing port`},
		{"token as field", `{"hosts":[],"` + hlToken + `":1}`, `unknown field "[token]"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := hlServe(t, false, http.StatusOK, c.body)
			p := hlProvider(t, srv.Server, "/h", hlToken)
			got, err := p.Hosts(hlCtx(t))
			if got != nil {
				t.Errorf("Hosts returned a list: %+v", got)
			}
			hlCheckErr(t, err)
			if !errors.Is(err, cluster.ErrInvalidHostList) {
				t.Errorf("error %q does not match ErrInvalidHostList", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want it to contain %q", err, c.want)
			}
			if want := "from " + srv.URL + "/h: "; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name the provider (%q)", err, want)
			}
			if len(err.Error()) > 600 {
				t.Errorf("error of %d bytes", len(err.Error()))
			}
		})
	}
}

// TestHTTPHostListOversizeDeclared: a Content-Length beyond the cap is refused up front.
func TestHTTPHostListOversizeDeclared(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(cluster.DefaultMaxHostListBytes+1))
		_, _ = w.Write([]byte(`{"hosts":[{"addr":"db1:3306"}]}`)) // short: the client must not wait for the rest
	}))
	defer srv.Close()
	p := hlProvider(t, srv, "/", hlToken)
	_, err := p.Hosts(hlCtx(t))
	hlCheckErr(t, err)
	if !errors.Is(err, cluster.ErrInvalidHostList) || !strings.Contains(err.Error(), "the limit is 1048576") {
		t.Fatalf("error %q", err)
	}
}

func TestHTTPHostListStatus(t *testing.T) {
	for _, c := range []struct {
		status int
		want   string
	}{
		{http.StatusInternalServerError, "HTTP status 500 Internal Server Error"},
		{http.StatusUnauthorized, "HTTP status 401 Unauthorized"},
		{http.StatusNotFound, "HTTP status 404 Not Found"},
		{599, "HTTP status 599"},
	} {
		t.Run(fmt.Sprint(c.status), func(t *testing.T) {
			srv := hlServe(t, false, c.status, "BODY-NOT-SHOWN "+hlToken+` {"hosts":[{"addr":"db1:3306"}]}`)
			_, err := hlProvider(t, srv.Server, "/", hlToken).Hosts(hlCtx(t))
			hlCheckErr(t, err)
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "BODY-NOT-SHOWN") {
				t.Errorf("error shows the body: %q", err)
			}
			if errors.Is(err, cluster.ErrInvalidHostList) {
				t.Errorf("a status error matches ErrInvalidHostList: %q", err)
			}
		})
	}
}

// TestHTTPHostListContext: the request ends with the caller's context, and the error
// says so (errors.Is).
func TestHTTPHostListContext(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	p := hlProvider(t, srv, "/", hlToken)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Hosts(ctx)
	hlCheckErr(t, err)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %q does not match context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Hosts took %v after a 100ms deadline", d)
	}

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = p.Hosts(ctx)
	hlCheckErr(t, err)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %q does not match context.Canceled", err)
	}
}

// TestHTTPHostListRedirect: a redirect within the origin is followed with the token; one
// to another host (here another port of 127.0.0.1, to which net/http itself would
// forward the Authorization header) is refused before any request reaches it.
func TestHTTPHostListRedirect(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tls), func(t *testing.T) {
			other := hlServe(t, tls, http.StatusOK, `{"hosts":[{"addr":"evil:3306"}]}`)
			var mu sync.Mutex
			var auths []string
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				auths = append(auths, r.URL.Path+" "+r.Header.Get("Authorization"))
				mu.Unlock()
				switch r.URL.Path {
				case "/old":
					http.Redirect(w, r, "/new", http.StatusFound)
				case "/new":
					_, _ = w.Write([]byte(`{"hosts":[{"addr":"db1:3306"}]}`))
				case "/away":
					http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
				}
			})
			var srv *httptest.Server
			if tls {
				srv = httptest.NewTLSServer(h)
			} else {
				srv = httptest.NewServer(h)
			}
			defer srv.Close()

			got, err := hlProvider(t, srv, "/old", hlToken).Hosts(hlCtx(t))
			if err != nil || len(got) != 1 || got[0].Addr != "db1:3306" {
				t.Fatalf("same-origin redirect: %+v, %v", got, err)
			}
			_, err = hlProvider(t, srv, "/away", hlToken).Hosts(hlCtx(t))
			hlCheckErr(t, err)
			if !strings.Contains(err.Error(), "redirect to") || !strings.Contains(err.Error(), "refused") {
				t.Errorf("error %q does not say the redirect was refused", err)
			}
			if seen := other.seen(); len(seen) != 0 {
				t.Errorf("the other host received %d requests (Authorization %q)", len(seen), seen)
			}
			mu.Lock()
			defer mu.Unlock()
			want := []string{"/old Bearer " + hlToken, "/new Bearer " + hlToken, "/away Bearer " + hlToken}
			if !reflect.DeepEqual(auths, want) {
				t.Errorf("requests %q, want %q", auths, want)
			}
		})
	}
}

// TestHTTPHostListRedirectUserPolicy: a given client's CheckRedirect still runs, after
// the origin check.
func TestHTTPHostListRedirectUserPolicy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusFound)
			return
		}
		_, _ = w.Write([]byte(`{"hosts":[{"addr":"db1:3306"}]}`))
	}))
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
		return errors.New("no redirects here")
	}}
	defer client.CloseIdleConnections()
	p, err := cluster.NewHTTPHostList(srv.URL+"/old", hlToken, false, client)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Hosts(hlCtx(t))
	hlCheckErr(t, err)
	if !strings.Contains(err.Error(), "no redirects here") {
		t.Fatalf("error %q", err)
	}
}

// TestNewHTTPHostListURL: URL rules, checked before any request (none of these hosts
// exists).
func TestNewHTTPHostListURL(t *testing.T) {
	for _, c := range []struct {
		url       string
		allowHTTP bool
		token     string
		want      string // "" for accepted
	}{
		{"https://cfg.example/hosts.json", false, hlToken, ""},
		{"HTTPS://CFG.example:8443/h", false, hlToken, ""},
		{"http://127.0.0.1:8080/h", false, hlToken, ""},
		{"http://127.1.2.3/h", false, hlToken, ""},
		{"http://[::1]:8080/h", false, hlToken, ""},
		{"http://[::ffff:127.0.0.1]/h", false, hlToken, ""},
		{"http://localhost:8080/h", false, hlToken, ""},
		{"http://LocalHost/h", false, hlToken, ""},
		{"http://example.invalid/", true, hlToken, ""},
		{"https://cfg.example/h", false, "", ""},
		{"http://example.invalid/", false, hlToken, "plain http to a host that is not a loopback address"},
		{"http://10.0.0.1/h", false, hlToken, "plain http"},
		{"http://[::2]/h", false, hlToken, "plain http"},
		{"http://localhost.example/h", false, hlToken, "plain http"},
		{"https://user:" + hlToken + "@cfg.example/h", false, hlToken, "must not carry credentials"},
		{"https://" + hlToken + "@cfg.example/h", false, hlToken, "must not carry credentials"},
		{"https://user:pw@cfg.example/h", false, "", "must not carry credentials"},
		{"ftp://cfg.example/h", false, hlToken, `scheme "ftp"`},
		{"cfg.example/h", false, hlToken, `scheme ""`},
		{"https:///h", false, hlToken, "no host"},
		{"https:cfg.example", false, hlToken, "no host"},
		{"https://cfg.example:port/h", false, hlToken, "invalid port"},
		{"https://user:" + hlToken + "@cfg.example:port/h", false, hlToken, "host list URL"},
		{"https://cfg.example/h\n", false, hlToken, "host list URL"},
		{"https://cfg.example/h", false, "Bearer " + hlToken, "contains a blank or control character"},
		{"https://cfg.example/h", false, hlToken + "\r\nX-Evil: 1", "token"},
	} {
		t.Run(c.url, func(t *testing.T) {
			p, err := cluster.NewHTTPHostList(c.url, c.token, c.allowHTTP, nil)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if strings.Contains(p.String(), hlToken) {
					t.Fatalf("String shows the token: %q", p)
				}
				return
			}
			if p != nil {
				t.Errorf("returned a provider with the error")
			}
			hlCheckErr(t, err)
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want it to contain %q", err, c.want)
			}
			if strings.Contains(err.Error(), "pw") {
				t.Errorf("error shows the password: %q", err)
			}
		})
	}
}

// TestHTTPHostListQueryHidden: the URL's query (which may hold a secret) is in no error.
func TestHTTPHostListQueryHidden(t *testing.T) {
	srv := hlServe(t, false, http.StatusServiceUnavailable, "")
	p, err := cluster.NewHTTPHostList(srv.URL+"/h?sig="+hlToken, hlToken, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.CloseIdleConnections()
	_, err = p.Hosts(hlCtx(t))
	hlCheckErr(t, err)
	if want := "host list " + srv.URL + "/h?...: HTTP status 503"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want it to contain %q", err, want)
	}
}

func TestValidateHosts(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, c := range []struct {
		name  string
		hosts []failover.ProvidedHost
		want  string // "" for valid
	}{
		{"one", []failover.ProvidedHost{{Addr: "db1:3306"}}, ""},
		{"mixed", []failover.ProvidedHost{{Addr: "db1:3306", DC: "east"}, {Addr: "10.0.0.2:1"}, {Addr: "[2001:db8::1]:65535", DC: "W.e_s-t9"}, {Addr: "[fe80::1%eth0]:3306"}, {Addr: "db1:3307"}}, ""},
		{"label 64", []failover.ProvidedHost{{Addr: "db1:3306", DC: strings.Repeat("a", 64)}}, ""},
		{"nil", nil, "no hosts"},
		{"empty", []failover.ProvidedHost{}, "no hosts"},
		{"missing port", []failover.ProvidedHost{{Addr: "db1:3306"}, {Addr: "db2"}}, `entry 2 (addr "db2"): missing port`},
		{"missing port v6", []failover.ProvidedHost{{Addr: "[::1]"}}, `entry 1 (addr "[::1]"): missing port`},
		{"empty port", []failover.ProvidedHost{{Addr: "db1:"}}, `entry 1 (addr "db1:"): invalid port ""`},
		{"port 0", []failover.ProvidedHost{{Addr: "db1:0"}}, `invalid port "0"`},
		{"port 65536", []failover.ProvidedHost{{Addr: "db1:65536"}}, `invalid port "65536"`},
		{"port sign", []failover.ProvidedHost{{Addr: "db1:+3306"}}, `invalid port "+3306"`},
		{"port long", []failover.ProvidedHost{{Addr: "db1:0000003306"}}, `invalid port "0000003306"`},
		{"empty addr", []failover.ProvidedHost{{Addr: ""}}, "entry 1 (addr \"\"): empty addr"},
		{"empty name", []failover.ProvidedHost{{Addr: ":3306"}}, "empty host name"},
		{"v6 unbracketed", []failover.ProvidedHost{{Addr: "::1:3306"}}, "IPv6 address must be in brackets"},
		{"bracketed name", []failover.ProvidedHost{{Addr: "[db1]:3306"}}, "brackets must enclose an IPv6 address"},
		{"bracketed v4", []failover.ProvidedHost{{Addr: "[10.0.0.1]:3306"}}, "brackets must enclose an IPv6 address"},
		{"unbalanced", []failover.ProvidedHost{{Addr: "[::1:3306"}}, "unbalanced brackets"},
		{"stray bracket", []failover.ProvidedHost{{Addr: "db]1:3306"}}, "unbalanced brackets"},
		{"after bracket", []failover.ProvidedHost{{Addr: "[::1]3306"}}, `want "[address]:port"`},
		{"blank", []failover.ProvidedHost{{Addr: "db 1:3306"}}, "blank or control character"},
		{"control", []failover.ProvidedHost{{Addr: "db\x001:3306"}}, "blank or control character"},
		{"del", []failover.ProvidedHost{{Addr: "db\x7f:3306"}}, "blank or control character"},
		{"comma", []failover.ProvidedHost{{Addr: "db1,db2:3306"}}, `host name contains ','`},
		{"at", []failover.ProvidedHost{{Addr: "u@db1:3306"}}, `host name contains '@'`},
		{"slash", []failover.ProvidedHost{{Addr: "db1/x:3306"}}, `host name contains '/'`},
		{"paren", []failover.ProvidedHost{{Addr: "tcp(db1:3306"}}, `host name contains '('`},
		{"semicolon", []failover.ProvidedHost{{Addr: "db1;dc=x:3306"}}, `host name contains ';'`},
		{"duplicate", []failover.ProvidedHost{{Addr: "db1:3306"}, {Addr: "db2:3306"}, {Addr: "db1:3306", DC: "x"}}, `entry 3 (addr "db1:3306", dc "x"): duplicate of entry 1`},
		{"duplicate case", []failover.ProvidedHost{{Addr: "Db1.Example:3306"}, {Addr: "db1.example:3306"}}, `entry 2 (addr "db1.example:3306"): duplicate of entry 1`},
		{"duplicate v6", []failover.ProvidedHost{{Addr: "[::1]:3306"}, {Addr: "[0:0::0:1]:3306"}}, `entry 2 (addr "[0:0::0:1]:3306"): duplicate of entry 1`},
		{"duplicate v6 case", []failover.ProvidedHost{{Addr: "[2001:DB8::1]:3306"}, {Addr: "[2001:db8::1]:3306"}}, "duplicate of entry 1"},
		{"duplicate mapped", []failover.ProvidedHost{{Addr: "10.0.0.1:3306"}, {Addr: "[::ffff:10.0.0.1]:3306"}}, "duplicate of entry 1"},
		{"duplicate port zeros", []failover.ProvidedHost{{Addr: "db1:3306"}, {Addr: "db1:03306"}}, "duplicate of entry 1"},
		{"bad label", []failover.ProvidedHost{{Addr: "db1:3306", DC: "east/1"}}, `entry 1 (addr "db1:3306", dc "east/1"): dc label "east/1" contains '/'`},
		{"label 65", []failover.ProvidedHost{{Addr: "db1:3306"}, {Addr: "db2:3306", DC: strings.Repeat("a", 65)}}, "entry 2 (addr \"db2:3306\", dc \"" + strings.Repeat("a", 65) + "\"): dc label of 65 bytes"},
		{"label unicode", []failover.ProvidedHost{{Addr: "db1:3306", DC: "ést"}}, `contains 'é'`},
		{"long addr", []failover.ProvidedHost{{Addr: long + ":x"}}, `entry 1 (addr "` + strings.Repeat("x", 100) + `"...): invalid port "x"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := cluster.ValidateHosts(c.hosts)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			hlCheckErr(t, err)
			if !errors.Is(err, cluster.ErrInvalidHostList) {
				t.Errorf("error %q does not match ErrInvalidHostList", err)
			}
			if !strings.HasPrefix(err.Error(), "mysqlfailover: invalid host list: ") {
				t.Errorf("error %q", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want it to contain %q", err, c.want)
			}
			if strings.Contains(err.Error(), long[:101]) {
				t.Errorf("error echoes more than 100 bytes of a field: %q", err)
			}
		})
	}
}

// TestValidateHostsEchoesOnlyTheEntry: the error quotes the offending entry, not its
// neighbours.
func TestValidateHostsEchoesOnlyTheEntry(t *testing.T) {
	err := cluster.ValidateHosts([]failover.ProvidedHost{
		{Addr: "first-host:3306", DC: "first-dc"}, {Addr: "bad host:3306"}, {Addr: "third-host:3306"},
	})
	hlCheckErr(t, err)
	for _, s := range []string{"first-host", "first-dc", "third-host"} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error %q quotes another entry (%s)", err, s)
		}
	}
}

// TestHTTPHostListDefaultClient: a provider built without a client works against a
// loopback server, and its idle connections can be closed (goleak, TestMain).
func TestHTTPHostListDefaultClient(t *testing.T) {
	srv := hlServe(t, false, http.StatusOK, `{"hosts":[{"addr":"db1:3306"}]}`)
	p, err := cluster.NewHTTPHostList(srv.URL, "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.CloseIdleConnections()
	got, err := p.Hosts(hlCtx(t))
	if err != nil || len(got) != 1 {
		t.Fatalf("Hosts = %+v, %v", got, err)
	}
}

// An HTTPHostList is a HostListProvider.
var _ failover.HostListProvider = (*cluster.HTTPHostList)(nil)
