package spf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sort"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"
)

// The OpenSPF test suites (release 2014.04 for RFC 7208, 2009.10 for RFC
// 4408), unchanged from the copies pyspf ships. Each YAML document is a
// scenario: a zone and the cases run against it.
const (
	rfc7208Suite = "../../testdata/spf/rfc7208-tests.yml"
	rfc7208Cases = 203
)

// rfc4408Suites are the places the optional RFC 4408 suite may be found.
var rfc4408Suites = []string{
	"../../testdata/spf/rfc4408-tests.yml",
	"../../../shared/testdata/spf/rfc4408-tests.yml",
}

type scenario struct {
	Description string              `yaml:"description"`
	Tests       map[string]testCase `yaml:"tests"`
	Zonedata    map[string][]any    `yaml:"zonedata"`
}

type testCase struct {
	Helo        string  `yaml:"helo"`
	Host        string  `yaml:"host"`
	MailFrom    string  `yaml:"mailfrom"`
	Result      any     `yaml:"result"` // one result or a list of acceptable ones
	Explanation *string `yaml:"explanation"`
	Spec        any     `yaml:"spec"`
}

// accepts reports whether got is one of the acceptable results.
func (c testCase) accepts(got Result) bool {
	switch r := c.Result.(type) {
	case string:
		return Result(r) == got
	case []any:
		for _, v := range r {
			if Result(fmt.Sprint(v)) == got {
				return true
			}
		}
	}
	return false
}

func loadSuite(t testing.TB, path string) []scenario {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []scenario
	dec := yaml.NewDecoder(f)
	for {
		var s scenario
		err := dec.Decode(&s)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, s)
	}
	return out
}

// run evaluates one case against r and says what is wrong, if anything.
func (c testCase) run(r Resolver) string {
	ip := net.ParseIP(c.Host)
	if ip == nil {
		return fmt.Sprintf("bad host %q", c.Host)
	}
	clock := WithClock(func() time.Time { return time.Unix(1400000000, 0) })
	res, exp, err := CheckMailFrom(context.Background(), r, ip, c.MailFrom, c.Helo, clock)
	if !c.accepts(res) {
		return fmt.Sprintf("result %s (err %v), want %v", res, err, c.Result)
	}
	// The failure rule of the package comment: an error exactly when the
	// result is an error result.
	if (err != nil) != (res == TempError || res == PermError) {
		return fmt.Sprintf("result %s with error %v", res, err)
	}
	if res == TempError && !errors.Is(err, ErrDNS) {
		return fmt.Sprintf("temperror whose error %v is not ErrDNS", err)
	}
	if c.Explanation != nil {
		want := *c.Explanation
		if want == "DEFAULT" { // the suite's name for "no exp= text"
			want = ""
		}
		if exp != want {
			return fmt.Sprintf("explanation %q, want %q", exp, want)
		}
	}
	return ""
}

// runSuite runs every case of the file and returns the names of those
// that failed, with the reason, and the number of cases.
func runSuite(t *testing.T, path string) (failed []string, total int) {
	for _, s := range loadSuite(t, path) {
		z, err := newZone(s.Zonedata)
		if err != nil {
			t.Fatalf("%s: %v", s.Description, err)
		}
		names := make([]string, 0, len(s.Tests))
		for name := range s.Tests {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			total++
			if why := s.Tests[name].run(z); why != "" {
				failed = append(failed, fmt.Sprintf("%s / %s (spec %v): %s", s.Description, name, s.Tests[name].Spec, why))
			}
		}
	}
	return failed, total
}

func TestRFC7208Suite(t *testing.T) {
	failed, total := runSuite(t, rfc7208Suite)
	for _, f := range failed {
		t.Error(f)
	}
	if total != rfc7208Cases {
		t.Errorf("suite has %d cases, want %d", total, rfc7208Cases)
	}
	t.Logf("RFC 7208 suite: %d/%d pass", total-len(failed), total)
}

// TestRFC4408Suite runs the older suite for information only: RFC 7208
// changed several answers (SPF type 99 records, void lookups, MX limits),
// so some of its cases are expected to disagree.
func TestRFC4408Suite(t *testing.T) {
	i := slices.IndexFunc(rfc4408Suites, func(p string) bool { _, err := os.Stat(p); return err == nil })
	if i < 0 {
		t.Skip("rfc4408-tests.yml not found")
	}
	failed, total := runSuite(t, rfc4408Suites[i])
	for _, f := range failed {
		t.Log("differs: " + f)
	}
	t.Logf("RFC 4408 suite: %d/%d pass", total-len(failed), total)
}
