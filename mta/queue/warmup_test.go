package queue

import (
	"errors"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the DST cases must not depend on the host's zoneinfo
)

func mustWarmup(t testing.TB, s string) Schedule {
	t.Helper()
	sched, err := ParseSchedule(s)
	if err != nil {
		t.Fatal(err)
	}
	return sched
}

func warmupZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestWarmupScheduleCaps(t *testing.T) {
	const unlimited = -1
	tests := []struct {
		schedule string
		day      int
		want     int // or unlimited
	}{
		{"standard", -3, 50},
		{"standard", 0, 50},
		{"standard", 1, 50},
		{"standard", 2, 100},
		{"standard", 3, 200},
		{"standard", 6, 1_500},
		{"standard", 7, 3_000},
		{"standard", 8, 4_500},
		{"standard", 14, 50_000},
		{"standard", 15, 75_000},
		{"standard", 21, 800_000},
		{"standard", 22, 1_200_000},
		{"standard", 28, 13_500_000},
		{"standard", 29, unlimited},
		{"standard", 10_000, unlimited},
		{"none", -1, unlimited},
		{"none", 1, unlimited},
		{"none", 30, unlimited},
		{"10,20", 1, 10},
		{"10,20", 2, 20},
		{"10,20", 3, unlimited},
	}
	for _, tt := range tests {
		limit, unl := mustWarmup(t, tt.schedule).Cap(tt.day)
		got := limit
		if unl {
			got = unlimited
		}
		if got != tt.want || (unl && limit != 0) {
			t.Errorf("%s.Cap(%d) = %d, %v; want %d", tt.schedule, tt.day, limit, unl, tt.want)
		}
	}
	if _, unl := (Schedule{}).Cap(1); !unl {
		t.Error("the zero Schedule has a cap; want none")
	}
}

// The standard ramp keeps the shape its comment promises: 2–4 weeks,
// roughly doubling in week 1, then steps of about +50%.
func TestWarmupStandardShape(t *testing.T) {
	s := mustWarmup(t, DefaultWarmup)
	if s.Days() < 14 || s.Days() > 28 {
		t.Fatalf("standard caps %d days; want 2 to 4 weeks", s.Days())
	}
	for day := 2; day <= s.Days(); day++ {
		prev, _ := s.Cap(day - 1)
		cur, _ := s.Cap(day)
		ratio := float64(cur) / float64(prev)
		lo, hi := 1.4, 1.6
		if day <= 7 {
			lo, hi = 1.8, 2.0
		}
		if ratio < lo || ratio > hi {
			t.Errorf("day %d: %d after %d is ×%.2f; want ×%.1f to ×%.1f", day, cur, prev, ratio, lo, hi)
		}
	}
}

// The table in warmup.go's comment is the standard schedule's data.
func TestWarmupDocShowsStandard(t *testing.T) {
	src, err := os.ReadFile("warmup.go")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^//\tday +(\d+)–(\d*) *: +(.*)$`)
	var doc []int
	unlimitedFrom := 0
	for _, m := range row.FindAllStringSubmatch(string(src), -1) {
		first, _ := strconv.Atoi(m[1])
		if strings.TrimSpace(m[3]) == "unlimited" {
			unlimitedFrom = first
			continue
		}
		if first != len(doc)+1 {
			t.Fatalf("comment row starts at day %d; want %d", first, len(doc)+1)
		}
		for f := range strings.FieldsSeq(m[3]) {
			n, err := strconv.Atoi(strings.ReplaceAll(f, ",", ""))
			if err != nil {
				t.Fatalf("comment row %q: %v", m[0], err)
			}
			doc = append(doc, n)
		}
		if last, _ := strconv.Atoi(m[2]); last != len(doc) {
			t.Errorf("comment row %q ends at day %d; holds day %d", m[0], last, len(doc))
		}
	}
	if want := warmupSchedules["standard"]; !slices.Equal(doc, want) {
		t.Errorf("comment shows\n%v\nschedule is\n%v", doc, want)
	}
	if want := len(warmupSchedules["standard"]) + 1; unlimitedFrom != want {
		t.Errorf("comment says unlimited from day %d; want %d", unlimitedFrom, want)
	}
}

func TestWarmupParseSchedule(t *testing.T) {
	sixty := strings.Repeat("7,", MaxScheduleDays-1) + "7"
	tests := []struct {
		in, str string
		days    int
		day1    int
	}{
		{"standard", "standard", 28, 50},
		{" Standard ", "standard", 28, 50},
		{"none", "none", 0, 0},
		{"50", "50", 1, 50},
		{"50,100,200,400,800,1500,3000", "50,100,200,400,800,1500,3000", 7, 50},
		{" 50 , 100 ,200", "50,100,200", 3, 50},
		{"5,5,5", "5,5,5", 3, 5},
		{"007,8", "7,8", 2, 7},
		{sixty, sixty, MaxScheduleDays, 7},
	}
	for _, tt := range tests {
		s, err := ParseSchedule(tt.in)
		if err != nil {
			t.Errorf("ParseSchedule(%q): %v", tt.in, err)
			continue
		}
		if s.String() != tt.str || s.Days() != tt.days {
			t.Errorf("ParseSchedule(%q) = %q with %d days; want %q with %d", tt.in, s, s.Days(), tt.str, tt.days)
		}
		if got, _ := s.Cap(1); got != tt.day1 {
			t.Errorf("ParseSchedule(%q): day 1 cap %d; want %d", tt.in, got, tt.day1)
		}
		again, err := ParseSchedule(s.String())
		if err != nil || again.String() != s.String() || !slices.Equal(again.caps, s.caps) {
			t.Errorf("ParseSchedule(%q) does not round-trip: %v, %v", s, again, err)
		}
	}

	bad := []struct{ in, why string }{
		{"", "empty"},
		{"   ", "empty"},
		{"0", "not positive"},
		{"50,0", "not positive"},
		{"-5", "whole number"},
		{"+5", "whole number"},
		{"1.5", "whole number"},
		{"1e3", "whole number"},
		{"abc", "whole number"},
		{"fast", "whole number"},
		{"standard,50", "whole number"},
		{"50;100", "whole number"},
		{"50 100", "whole number"},
		{"50,,100", "whole number"},
		{"50,100,", "whole number"},
		{",50", "whole number"},
		{"100,50", "below day 1's 100"},
		{"50,100,200,150", "below day 3's 200"},
		{"99999999999999999999", "too large"},
		{sixty + ",7", "61 days, at most 60"},
	}
	for _, tt := range bad {
		s, err := ParseSchedule(tt.in)
		if err == nil {
			t.Errorf("ParseSchedule(%q) = %v; want an error", tt.in, s)
			continue
		}
		if !errors.Is(err, ErrBadSchedule) || !strings.Contains(err.Error(), tt.why) {
			t.Errorf("ParseSchedule(%q) error %q; want ErrBadSchedule saying %q", tt.in, err, tt.why)
		}
	}
}

func TestWarmupScheduleNames(t *testing.T) {
	names := ScheduleNames()
	if !slices.Equal(names, []string{"none", "standard"}) {
		t.Errorf("ScheduleNames() = %v", names)
	}
	if !slices.Contains(names, DefaultWarmup) {
		t.Errorf("DefaultWarmup %q is not a schedule", DefaultWarmup)
	}
	if s := (Schedule{}); s.String() != "none" || s.Days() != 0 {
		t.Errorf("zero Schedule = %q, %d days; want none", s, s.Days())
	}
}

// Admin input: whatever parses is a valid schedule and round-trips.
func FuzzWarmupParseSchedule(f *testing.F) {
	for _, s := range []string{"standard", "none", "50,100,200", "5,5", "100,50", "", "0", "1,,2", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSchedule(in)
		if err != nil {
			if !errors.Is(err, ErrBadSchedule) {
				t.Fatalf("error %v does not wrap ErrBadSchedule", err)
			}
			return
		}
		if s.Days() > MaxScheduleDays {
			t.Fatalf("%d days", s.Days())
		}
		prev := 1
		for day := 1; day <= s.Days(); day++ {
			c, unl := s.Cap(day)
			if unl || c < prev {
				t.Fatalf("day %d: cap %d, unlimited %v after %d", day, c, unl, prev)
			}
			prev = c
		}
		if _, unl := s.Cap(s.Days() + 1); !unl {
			t.Fatal("capped after the last day")
		}
		again, err := ParseSchedule(s.String())
		if err != nil || !slices.Equal(again.caps, s.caps) {
			t.Fatalf("%q does not round-trip: %v", s, err)
		}
	})
}

func TestWarmupDay(t *testing.T) {
	paris := warmupZone(t, "Europe/Paris")
	newYork := warmupZone(t, "America/New_York")
	utc := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	in := func(loc *time.Location, s string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	tests := []struct {
		name       string
		start, now time.Time
		loc        *time.Location // nil: WarmupDay (UTC)
		want       int
	}{
		{"same instant", utc("2026-03-10T09:00:00Z"), utc("2026-03-10T09:00:00Z"), nil, 1},
		{"end of the first day", utc("2026-03-10T00:00:00Z"), utc("2026-03-10T23:59:59.999999999Z"), nil, 1},
		{"one minute across midnight", utc("2026-03-10T23:59:00Z"), utc("2026-03-11T00:00:00Z"), nil, 2},
		{"almost two days", utc("2026-03-10T00:00:00Z"), utc("2026-03-11T23:59:59Z"), nil, 2},
		{"last capped standard day", utc("2026-03-10T12:00:00Z"), utc("2026-04-06T08:00:00Z"), nil, 28},
		{"first unlimited standard day", utc("2026-03-10T12:00:00Z"), utc("2026-04-07T00:00:00Z"), nil, 29},
		{"across a year and a leap day", utc("2027-12-31T22:00:00Z"), utc("2028-03-01T01:00:00Z"), nil, 62},
		{"start later than now", utc("2026-03-10T12:00:00Z"), utc("2026-03-08T12:00:00Z"), nil, 1},
		// Times given in other zones still count UTC dates.
		{"Paris same date, UTC next date", in(paris, "2026-03-29 00:30"), in(paris, "2026-03-29 03:30"), nil, 2},
		{"New York: 24 h over the fall-back day, two UTC dates", in(newYork, "2026-11-01 00:30"), in(newYork, "2026-11-01 23:30"), nil, 2},
		{"UTC explicitly", in(paris, "2026-03-29 00:30"), in(paris, "2026-03-29 03:30"), time.UTC, 2},
		// Days in a zone with DST: dates, not 24-hour spans.
		{"Paris: spring-forward night is still one date", in(paris, "2026-03-29 00:30"), in(paris, "2026-03-29 03:30"), paris, 1},
		{"Paris: across the 23-hour day", in(paris, "2026-03-28 23:30"), in(paris, "2026-03-30 00:10"), paris, 3},
		{"New York: the 25-hour day is one date", in(newYork, "2026-11-01 00:30"), in(newYork, "2026-11-01 23:30"), newYork, 1},
		{"New York: spring forward", in(newYork, "2026-03-07 12:00"), in(newYork, "2026-03-09 00:30"), newYork, 3},
	}
	for _, tt := range tests {
		var got int
		if tt.loc == nil {
			got = WarmupDay(tt.start, tt.now)
			if viaNil := WarmupDayIn(tt.start, tt.now, nil); viaNil != got {
				t.Errorf("%s: WarmupDayIn(nil) = %d, WarmupDay = %d", tt.name, viaNil, got)
			}
		} else {
			got = WarmupDayIn(tt.start, tt.now, tt.loc)
		}
		if got != tt.want {
			t.Errorf("%s: day %d; want %d (start %v, now %v)", tt.name, got, tt.want, tt.start, tt.now)
		}
	}
}

func TestWarmupNextReset(t *testing.T) {
	paris := warmupZone(t, "Europe/Paris")
	tests := []struct {
		name      string
		now, want time.Time
		loc       *time.Location // nil: NextReset (UTC)
	}{
		{"midday", time.Date(2026, 3, 10, 13, 0, 0, 0, time.UTC), time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC), nil},
		{"at midnight: the next one", time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC), nil},
		{"last nanosecond", time.Date(2026, 3, 10, 23, 59, 59, 999_999_999, time.UTC), time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC), nil},
		{"year end", time.Date(2026, 12, 31, 18, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), nil},
		{"leap day", time.Date(2028, 2, 28, 18, 0, 0, 0, time.UTC), time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC), nil},
		{"given in Paris, reset at UTC midnight", time.Date(2026, 3, 29, 0, 30, 0, 0, paris), time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC), nil},
		{"Paris days, across spring forward", time.Date(2026, 3, 29, 0, 30, 0, 0, paris), time.Date(2026, 3, 30, 0, 0, 0, 0, paris), paris},
	}
	for _, tt := range tests {
		var got time.Time
		if tt.loc == nil {
			got = NextReset(tt.now)
			if got.Location() != time.UTC {
				t.Errorf("%s: NextReset in %v; want UTC", tt.name, got.Location())
			}
		} else {
			got = NextResetIn(tt.now, tt.loc)
		}
		if !got.Equal(tt.want) {
			t.Errorf("%s: NextReset(%v) = %v; want %v", tt.name, tt.now, got, tt.want)
		}
		loc := warmupLoc(tt.loc, time.UTC)
		if d := WarmupDayIn(tt.now, got, loc); d != 2 {
			t.Errorf("%s: the reset is on day %d of now; want 2", tt.name, d)
		}
		if d := WarmupDayIn(tt.now, got.Add(-time.Nanosecond), loc); d != 1 {
			t.Errorf("%s: just before the reset is day %d of now; want 1", tt.name, d)
		}
	}
}

func warmupLoc(loc, def *time.Location) *time.Location {
	if loc == nil {
		return def
	}
	return loc
}

func TestWarmupRemaining(t *testing.T) {
	std, none := mustWarmup(t, "standard"), mustWarmup(t, "none")
	tests := []struct {
		ip   IPState
		want int
		unl  bool
	}{
		{IPState{Day: 1, SentToday: 0, Schedule: std}, 50, false},
		{IPState{Day: 1, SentToday: 49, Schedule: std}, 1, false},
		{IPState{Day: 1, SentToday: 50, Schedule: std}, 0, false},
		{IPState{Day: 1, SentToday: 80, Schedule: std}, 0, false},
		{IPState{Day: 0, SentToday: 10, Schedule: std}, 40, false},
		{IPState{Day: 2, SentToday: 10, Schedule: std}, 90, false},
		{IPState{Day: 29, SentToday: 1e8, Schedule: std}, 0, true},
		{IPState{Day: 1, SentToday: 1e8, Schedule: none}, 0, true},
		{IPState{Day: 1, SentToday: 5}, 0, true},
	}
	for _, tt := range tests {
		n, unl := tt.ip.Remaining()
		if n != tt.want || unl != tt.unl {
			t.Errorf("%+v: Remaining() = %d, %v; want %d, %v", tt.ip, n, unl, tt.want, tt.unl)
		}
	}
}

func TestWarmupPick(t *testing.T) {
	std, none := mustWarmup(t, "standard"), mustWarmup(t, "none")
	tiny := mustWarmup(t, "3,6")
	ip := func(day, sent int, s Schedule) IPState { return IPState{Day: day, SentToday: sent, Schedule: s} }
	tests := []struct {
		name string
		ips  []IPState
		want int // -1: not ok
	}{
		{"empty pool", nil, -1},
		{"one IP with headroom", []IPState{ip(1, 0, std)}, 0},
		{"one IP at its cap", []IPState{ip(1, 50, std)}, -1},
		{"one IP over its cap", []IPState{ip(1, 70, std)}, -1},
		{"capped IPs are skipped", []IPState{ip(1, 50, std), ip(2, 10, std), ip(2, 5, std)}, 2},
		{"fewest sent wins, not most headroom", []IPState{ip(20, 1_000, std), ip(1, 10, std)}, 1},
		{"tie: the first", []IPState{ip(3, 7, std), ip(5, 7, std), ip(9, 7, std)}, 0},
		{"all capped", []IPState{ip(1, 50, std), ip(2, 100, std), ip(1, 3, tiny), ip(2, 6, tiny)}, -1},
		{"a new IP beside a warm one still gets mail", []IPState{ip(1, 1_000_000, none), ip(1, 0, std)}, 1},
		{"the warm one takes over once the new one is capped", []IPState{ip(1, 1_000_000, none), ip(1, 50, std)}, 0},
		{"unlimited after the schedule", []IPState{ip(28, 13_500_000, std), ip(29, 20_000_000, std)}, 1},
		{"day 0 counts as day 1", []IPState{ip(0, 50, std), ip(0, 49, std)}, 1},
		{"unlimited IPs share by count", []IPState{ip(1, 12, none), ip(1, 11, Schedule{}), ip(40, 13, std)}, 1},
	}
	for _, tt := range tests {
		i, ok := Pick(tt.ips)
		if ok != (tt.want >= 0) || i != tt.want {
			t.Errorf("%s: Pick = %d, %v; want %d", tt.name, i, ok, tt.want)
		}
	}
}

// Picks that are counted rotate through the IPs like round-robin.
func TestWarmupPickRotates(t *testing.T) {
	ips := []IPState{
		{Addr: "192.0.2.1", Day: 4, Schedule: mustWarmup(t, "standard")},
		{Addr: "192.0.2.2", Day: 4, Schedule: mustWarmup(t, "standard")},
		{Addr: "192.0.2.3", Day: 1, Schedule: mustWarmup(t, "none")},
	}
	var got []int
	for range 9 {
		i, ok := Pick(ips)
		if !ok {
			t.Fatal("not ok with headroom left")
		}
		ips[i].SentToday++
		got = append(got, i)
	}
	if want := []int{0, 1, 2, 0, 1, 2, 0, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("picks %v; want %v", got, want)
	}
}

// warmupSim runs a pool through days of steady demand: each day the mail
// deferred the day before is retried at the reset, then the day's demand
// arrives spread over the day. It fails t if any IP sends more than its
// cap on any day, if mail is deferred while an IP has headroom, or if
// mail is lost, and returns what each IP sent each day and what is still
// waiting at the end.
type warmupSimIP struct {
	start    time.Time
	schedule Schedule
}

func warmupSim(t *testing.T, ips []warmupSimIP, first time.Time, days, demand int) (sentPerDay [][]int, waiting int) {
	t.Helper()
	type key struct {
		ip   int
		date int64
	}
	sent := map[key]int{}
	states := func(at time.Time) []IPState {
		s := make([]IPState, len(ips))
		for i, ip := range ips {
			s[i] = IPState{
				Addr:      "192.0.2." + strconv.Itoa(i+1),
				Day:       WarmupDay(ip.start, at),
				SentToday: sent[key{i, civilDay(at, time.UTC)}],
				Schedule:  ip.schedule,
			}
		}
		return s
	}
	for d := range days {
		dayStart := first.AddDate(0, 0, d)
		carried := waiting
		waiting = 0
		byIP := make([]int, len(ips))
		for k := range carried + demand {
			at := dayStart
			if k >= carried {
				at = dayStart.Add(time.Duration(k-carried) * (24 * time.Hour / time.Duration(demand)))
			}
			st := states(at)
			i, ok := Pick(st)
			if !ok {
				for _, s := range st {
					if n, unl := s.Remaining(); unl || n > 0 {
						t.Fatalf("day %d: deferred while %s has headroom (%d, unlimited %v)", d+1, s.Addr, n, unl)
					}
				}
				if reset := NextReset(at); !reset.Equal(dayStart.AddDate(0, 0, 1)) {
					t.Fatalf("day %d: deferred to %v", d+1, reset)
				}
				// Nothing frees up before the reset: the rest of the day waits.
				waiting = carried + demand - k
				if _, ok := Pick(states(dayStart.Add(24*time.Hour - time.Nanosecond))); ok {
					t.Fatalf("day %d: headroom again before the reset", d+1)
				}
				break
			}
			kk := key{i, civilDay(at, time.UTC)}
			sent[kk]++
			byIP[i]++
			if limit, unl := st[i].Schedule.Cap(st[i].Day); !unl && sent[kk] > limit {
				t.Fatalf("day %d: %s sent %d, cap %d (warm-up day %d)", d+1, st[i].Addr, sent[kk], limit, st[i].Day)
			}
		}
		sentPerDay = append(sentPerDay, byIP)
	}
	delivered := 0
	for _, byIP := range sentPerDay {
		for _, n := range byIP {
			delivered += n
		}
	}
	if delivered+waiting != days*demand {
		t.Fatalf("%d sent + %d waiting; %d arrived", delivered, waiting, days*demand)
	}
	return sentPerDay, waiting
}

func TestWarmupSimulatedMonth(t *testing.T) {
	first := time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC) // spans the EU and US DST changes
	std := mustWarmup(t, "standard")

	t.Run("two new IPs, 5,000 a day", func(t *testing.T) {
		ips := []warmupSimIP{{first.Add(9 * time.Hour), std}, {first.Add(17 * time.Hour), std}}
		perDay, waiting := warmupSim(t, ips, first, 30, 5_000)
		// Days 1–9 send exactly both caps while 23,900 messages pile up
		// and drain; day 10 (2 × 10,000) sends the last 9,900 of them
		// with its own 5,000.
		for d, want := range []int{50, 100, 200, 400, 800, 1_500, 3_000, 4_500, 7_000, 7_450, 2_500} {
			if got := perDay[d]; got[0] != want || got[1] != want {
				t.Errorf("day %d: sent %v; want %d each", d+1, got, want)
			}
		}
		if waiting != 0 || perDay[29][0]+perDay[29][1] != 5_000 {
			t.Errorf("day 30 sent %v with %d still waiting; want a steady 5,000", perDay[29], waiting)
		}
	})

	t.Run("a new IP beside a warm one warms up", func(t *testing.T) {
		ips := []warmupSimIP{{first.AddDate(-1, 0, 0), mustWarmup(t, "none")}, {first, std}}
		perDay, waiting := warmupSim(t, ips, first, 14, 20_000)
		if waiting != 0 {
			t.Errorf("%d waiting; want none", waiting)
		}
		// The new IP sends its whole cap every day (at most an even share),
		// the warm one the rest.
		for d, got := range perDay {
			if limit, _ := std.Cap(d + 1); got[1] != min(limit, 10_000) || got[0]+got[1] != 20_000 {
				t.Errorf("day %d: sent %v; want the new IP at %d of 20,000", d+1, got, limit)
			}
		}
	})

	// Random pools, schedules and demand: the invariants in warmupSim hold.
	rng := rand.New(rand.NewPCG(4, 2026))
	for trial := range 40 {
		ips := make([]warmupSimIP, 1+rng.IntN(4))
		for i := range ips {
			start := first.Add(-time.Duration(rng.IntN(20*24)) * time.Hour)
			var s Schedule
			switch rng.IntN(4) {
			case 0:
				s = std
			case 1:
				s = mustWarmup(t, "none")
			default:
				caps := make([]string, 1+rng.IntN(12))
				c := 0
				for j := range caps {
					c += rng.IntN(300)
					caps[j] = strconv.Itoa(max(c, 1))
				}
				s = mustWarmup(t, strings.Join(caps, ","))
			}
			ips[i] = warmupSimIP{start, s}
		}
		demand := 1 + rng.IntN(2_500)
		t.Run(strconv.Itoa(trial), func(t *testing.T) { warmupSim(t, ips, first, 30, demand) })
	}
}
