package dsn

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TransactionReplay and its limits (MaxScale's transaction_replay_max_size,
// _attempts and _timeout: 1 MiB, 5, 30 s).

func TestParseReplayOptions(t *testing.T) {
	c, err := Parse("app:pw@tcp(db1,db2)/shop?transactionReplay=true&transactionReplayMaxSize=512KiB&transactionReplayAttempts=3&transactionReplayTimeout=10s")
	if err != nil {
		t.Fatal(err)
	}
	if !c.TransactionReplay || c.TransactionReplayMaxSize != 512<<10 || c.TransactionReplayAttempts != 3 || c.TransactionReplayTimeout != 10*time.Second {
		t.Errorf("got %v %d %d %v", c.TransactionReplay, c.TransactionReplayMaxSize, c.TransactionReplayAttempts, c.TransactionReplayTimeout)
	}
	back, err := Parse(c.FormatDSN())
	if err != nil || back.TransactionReplayMaxSize != c.TransactionReplayMaxSize || back.TransactionReplayAttempts != 3 ||
		back.TransactionReplayTimeout != 10*time.Second || !back.TransactionReplay {
		t.Errorf("round trip of %q: %+v, %v", c.FormatDSN(), back, err)
	}
	d, err := Parse("tcp(db1)/")
	if err != nil {
		t.Fatal(err)
	}
	if d.TransactionReplay || d.TransactionReplayMaxSize != 1<<20 || d.TransactionReplayAttempts != 5 || d.TransactionReplayTimeout != 30*time.Second {
		t.Errorf("defaults: %v %d %d %v, want false, 1 MiB, 5, 30s", d.TransactionReplay, d.TransactionReplayMaxSize, d.TransactionReplayAttempts, d.TransactionReplayTimeout)
	}
	for size, want := range map[string]int{"1048576": 1 << 20, "1MiB": 1 << 20, "2GiB": 2 << 30, "100": 100, "3KiB": 3072, "0": 0} {
		if n, ok := parseSize(size); !ok || n != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", size, n, ok, want)
		}
		if n, ok := parseSize(formatSize(want)); !ok || n != want {
			t.Errorf("formatSize(%d) = %q does not read back", want, formatSize(want))
		}
	}
	for _, bad := range []string{"1M", "1 MiB", "-1", "1.5MiB", "MiB", "99999999999999999999", "9999999999999GiB"} {
		if _, ok := parseSize(bad); ok {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
}

func TestReplayOptionErrors(t *testing.T) {
	for s, w := range map[string]string{
		"/?transactionReplayMaxSize=1M":                           `transactionReplayMaxSize: invalid value "1M": want a size in bytes`,
		"/?transactionReplay=true&transactionReplayMaxSize=0":     "transactionReplayMaxSize=0: want a size in bytes > 0",
		"/?transactionReplay=true&transactionReplayAttempts=0":    "transactionReplayAttempts=0: want a count > 0",
		"/?transactionReplayTimeout=-1s":                          `transactionReplayTimeout: invalid value "-1s"`,
		"/?transaction_replay=true":                               `did you mean "transactionReplay"`,
		"/?transaction_replay_max_size=1MiB":                      `did you mean "transactionReplayMaxSize"`,
		"/?transactionReplaySize=64":                              `did you mean "transactionReplayMaxSize"`,
		"/?transaction_replay_timeout=30s":                        `did you mean "transactionReplayTimeout"`,
		"/?transactionreplayattempts=5":                           `did you mean "transactionReplayAttempts"`,
		"/?transactionReplay=yes":                                 `transactionReplay: invalid value "yes"`,
		"/?transactionReplay=1&transactionReplayAttempts=-1":      `transactionReplayAttempts: invalid value "-1"`,
		"/?transactionReplay=true&transactionReplayTimeout=0s&x=": "",
	} {
		_, err := Parse(s)
		switch {
		case w == "" && err != nil:
			t.Errorf("Parse(%q): %v, want nil", s, err)
		case w != "" && (err == nil || !strings.Contains(err.Error(), w) || !errors.Is(err, ErrInvalidOption)):
			t.Errorf("Parse(%q): %v, want ErrInvalidOption containing %q", s, err, w)
		}
	}
	c := NewConfig()
	c.Hosts = []Host{{Name: "db1", Port: 3306}}
	c.TransactionReplay, c.TransactionReplayMaxSize = true, -1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "transactionReplayMaxSize=-1") {
		t.Errorf("Validate: %v", err)
	}
}

// FormatDSN leaves the replay limits out when they are the defaults, or zero without
// replay (they mean nothing then); a timeout of 0 with replay (no bound) is written.
func TestFormatDSNReplay(t *testing.T) {
	c := NewConfig()
	c.Hosts = []Host{{Name: "db1", Port: 3306}}
	c.TransactionReplayMaxSize, c.TransactionReplayAttempts, c.TransactionReplayTimeout = 0, 0, 0
	if s := c.FormatDSN(); s != "tcp(db1:3306)/" {
		t.Errorf("zero limits without replay: %q", s)
	}
	c.TransactionReplay, c.TransactionReplayMaxSize, c.TransactionReplayAttempts = true, 1<<20, 5
	if s := c.FormatDSN(); s != "tcp(db1:3306)/?transactionReplay=true&transactionReplayTimeout=0s" {
		t.Errorf("replay with no timeout: %q", s)
	}
	c.TransactionReplayMaxSize, c.TransactionReplayAttempts, c.TransactionReplayTimeout = 3<<20+1, 2, time.Minute
	want := fmt.Sprintf("tcp(db1:3306)/?transactionReplay=true&transactionReplayMaxSize=%d&transactionReplayAttempts=2&transactionReplayTimeout=1m0s", 3<<20+1)
	if s := c.FormatDSN(); s != want {
		t.Errorf("FormatDSN = %q, want %q", s, want)
	}
}
