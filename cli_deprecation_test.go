package main

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"mailbolt/mta/dkim"
	"mailbolt/mta/smtptest"
	"mailbolt/storage"
)

func dateIn(years, months int) string {
	return time.Now().UTC().AddDate(years, months, 0).Format("2006-01-02")
}

// Without --system-from no notice can be sent: serve says so at start,
// records it per account, `accounts notices` lists it (through the socket
// while serving, and offline), and a restart with the same pair does not
// announce again.
func TestServeRecordsThatNoNoticeCouldBeSent(t *testing.T) {
	dir := t.TempDir()
	acct := lastLine(mustRun(t, "accounts", "create", "--name", "Desk Co", "--email", "desk@example.test", "--data-dir", dir))
	sunset := dateIn(1, 0)
	_, _, out, stop := startServeLogged(t, dir, "--deprecate", "v1", "--sunset", sunset)
	for _, want := range []string{"no deprecation notice could be sent to this account", `"account":"` + acct, `"reason":"not_configured"`,
		"deprecation announced"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("serve's log lacks %q\n%s", want, out)
		}
	}
	listed := mustRun(t, "accounts", "notices", "--data-dir", dir)
	if !strings.Contains(listed, acct) || !strings.Contains(listed, "not sent: not_configured") || !strings.Contains(listed, sunset) {
		t.Fatalf("accounts notices while serving:\n%s", listed)
	}
	stop()
	_, _, out, stop = startServeLogged(t, dir, "--deprecate", "v1", "--sunset", sunset)
	stop()
	if strings.Contains(out.String(), "deprecation announced") || strings.Contains(out.String(), "no deprecation notice") {
		t.Fatalf("a restart with the same pair announced again:\n%s", out)
	}
	if offline := mustRun(t, "accounts", "notices", "--data-dir", dir); offline != listed {
		t.Fatalf("offline listing differs:\n%s\nwhile serving:\n%s", offline, listed)
	}
}

func TestServeRefusesAShortSunset(t *testing.T) {
	dir := t.TempDir()
	short := dateIn(0, 2)
	_, err := run(t, "serve", "--data-dir", dir, "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0", "--metrics-addr=",
		"--deprecate", "v1", "--sunset", short)
	if err == nil || !strings.Contains(err.Error(), short) || !strings.Contains(err.Error(), dateIn(0, 0)) {
		t.Fatalf("a sunset in two months: %v, want a refusal naming %s and today", err, short)
	}
	_, _, out, stop := startServeLogged(t, dir, "--dev", "--deprecate", "v1", "--sunset", short)
	stop()
	if !strings.Contains(out.String(), "less than six months") {
		t.Fatalf("--dev starts without a warning:\n%s", out)
	}
}

// A --sunset serve refuses stops it before it opens the database for
// writing. A first start writes nothing (no data dir, key file or
// database), and doctor fails the date on that fresh dir as serve refuses
// it. On an existing database the announcements are read read-only first:
// the refusal comes while another process holds the file for reading, and
// an announcement five months old allows the same date.
func TestShortSunsetIsRefusedBeforeTheDatabaseIsOpened(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	short := dateIn(0, 2)
	serveArgs := func(dir string) []string {
		return []string{"serve", "--data-dir", dir, "--hostname", "mta.example.net", "--http-addr", "127.0.0.1:0",
			"--smtp-addr", "127.0.0.1:0", "--metrics-addr=", "--deprecate", "v1", "--sunset", short}
	}
	wantRefusal := func(what string, out string, err error) {
		t.Helper()
		if err == nil || !strings.HasPrefix(err.Error(), "--sunset: the sunset of v1 on "+short) ||
			!strings.Contains(err.Error(), "first announcement on "+dateIn(0, 0)) {
			t.Fatalf("%s: %v, want the --sunset refusal\n%s", what, err, out)
		}
	}
	out, err := runCanceled(serveArgs(dir)...)
	wantRefusal("first start", out, err)
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused first start wrote the data dir (%v)\n%s", err, out)
	}
	z, probe := doctorZone(t), smtpProbe(t)
	out, err = run(t, doctorArgs(z, dir, probe, "--deprecate", "v1", "--sunset", short)...)
	wantOneFailure(t, out, err, "deprecation: the sunset of v1 on "+short+" is less than six months after its first announcement on "+dateIn(0, 0))
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("doctor wrote the data dir (%v)", err)
	}

	mustRun(t, "accounts", "create", "--name", "Desk Co", "--data-dir", dir)
	reader, err := bolt.Open(filepath.Join(dir, storage.FileName), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	out, err = runCanceled(serveArgs(dir)...)
	reader.Close()
	wantRefusal("existing database, held for reading", out, err)

	db, err := storage.Open(dir, storage.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *storage.Tx) error {
		return tx.ClaimAnnouncement(storage.Announcement{Version: "v1", Sunset: time.Now().UTC().AddDate(1, 0, 0),
			AnnouncedAt: time.Now().UTC().AddDate(0, -5, 0)})
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, err = runCanceled(serveArgs(dir)...)
	if err != nil || !strings.Contains(out, "listening on") {
		t.Fatalf("a sunset two months away, seven after an announcement five months old: %v\n%s", err, out)
	}
}

// A server upgraded while already deprecating (a file from before schema
// v10, holding accounts) records the announcement, warns instead of
// refusing, and doctor fails until the dates allow six months.
func TestUpgradedServerWarnsAndDoctorFails(t *testing.T) {
	dir := t.TempDir()
	_, _, stop := startServe(t, dir)
	stop()
	b, err := bolt.Open(filepath.Join(dir, storage.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bolt.Tx) error { // back to version 9, as the build before wrote it
		for _, name := range []string{"announcements", "announcement_notices"} {
			if err := tx.DeleteBucket([]byte(name)); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte("schema_version"), []byte{0, 0, 0, 0, 0, 0, 0, 9})
	})
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	short := dateIn(0, 2)
	_, _, out, stop := startServeLogged(t, dir, "--deprecate", "v1", "--sunset", short)
	stop()
	if !strings.Contains(out.String(), "already deprecating") || !strings.Contains(out.String(), short) {
		t.Fatalf("no warning of the upgraded server:\n%s", out)
	}
	if listed := mustRun(t, "accounts", "notices", "--data-dir", dir); !strings.Contains(listed, "recorded at the upgrade") {
		t.Fatalf("accounts notices:\n%s", listed)
	}
	z, probe := doctorZone(t), smtpProbe(t)
	args := doctorArgs(z, dir, probe, "--deprecate", "v1", "--sunset", short)
	out2, err := run(t, args...)
	wantOneFailure(t, out2, err, "deprecation: the sunset of v1 on "+short+" is less than six months after its first announcement on "+dateIn(0, 0))
	// A later date, once announced, gives the six months.
	later := dateIn(0, 7)
	_, _, out, stop = startServeLogged(t, dir, "--deprecate", "v1", "--sunset", later)
	stop()
	if !strings.Contains(out.String(), "deprecation announced") {
		t.Fatalf("the later date was not announced:\n%s", out)
	}
	out2, err = run(t, doctorArgs(z, dir, probe, "--deprecate", "v1", "--sunset", later)...)
	if !strings.Contains(out2, "✓ deprecation: every sunset is at least six months") {
		t.Fatalf("doctor after a later date: %v\n%s", err, out2)
	}
}

// With a verified system sender, serve mails the notice to the account's
// owner: once across restarts with the same pair, again for a new sunset.
func TestServeMailsTheDeprecationNoticeToOwnersOnce(t *testing.T) {
	zone := destZone(t)
	sink, err := smtptest.Start("127.0.0.1:0", smtptest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	dir := t.TempDir()
	args := []string{"--dns-server", zone.Addr, "--mx-port", strconv.Itoa(sink.Port), "--mx-allow-cidrs", "127.0.0.0/8",
		"--hostname", "mx.mailbolt.test", "--system-from", "Mailbolt <notices@sys.test>", "--smtp-retry-base", "200ms",
		"--smtp-retry-max", "1s"}

	// The first start: a verified system domain and an owner who accepted.
	base, out, stop := startServe(t, dir, args...)
	live := liveKeyRe.FindStringSubmatch(out.String())[1]
	call := apiCaller(t, base, live)
	dom := call("POST", "/v1/domains", `{"name":"sys.test"}`, 201)
	for _, r := range dom["records"].([]any) {
		rec := r.(map[string]any)
		name, value := rec["name"].(string), rec["value"].(string)
		switch rec["type"] {
		case "CNAME":
			zone.CNAME(name, value)
		default:
			zone.LongTXT(name, dkim.JoinTXT(value))
		}
	}
	if d := call("POST", "/v1/domains/"+dom["id"].(string)+"/verify", "", 200); d["status"] != "verified" {
		t.Fatalf("system domain: %v", d)
	}
	inv := call("POST", "/v1/team/invite", `{"email":"ann@dest.test","role":"owner"}`, 201)
	resp, err := http.Post(base+"/v1/team/accept/"+inv["accept_token"].(string), "application/x-www-form-urlencoded", nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("accept: %v %v", resp, err)
	}
	resp.Body.Close()
	stop()

	notices := func() int {
		n := 0
		for _, m := range sink.Messages() {
			if len(m.To) == 1 && m.To[0] == "ann@dest.test" && strings.Contains(string(m.Data), "Subject: Mailbolt API v1 is deprecated") {
				n++
			}
		}
		return n
	}
	waitFor := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); notices() != n; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d notices reached ann, want %d", notices(), n)
			}
		}
	}
	listed := func() int {
		return strings.Count(mustRun(t, "accounts", "notices", "--data-dir", dir), "ann@dest.test")
	}

	first := dateIn(1, 0)
	_, _, stop = startServe(t, dir, append(args, "--deprecate", "v1", "--sunset", first)...)
	waitFor(1)
	stop()
	_, _, stop = startServe(t, dir, append(args, "--deprecate", "v1", "--sunset", first)...)
	if n := listed(); n != 1 {
		t.Fatalf("after a restart with the same pair, %d notices to ann are recorded, want 1", n)
	}
	stop()
	_, _, stop = startServe(t, dir, append(args, "--deprecate", "v1", "--sunset", dateIn(1, 1))...)
	waitFor(2)
	stop()
	if n := listed(); n != 2 {
		t.Fatalf("after a new sunset, %d notices to ann are recorded, want 2", n)
	}
}
