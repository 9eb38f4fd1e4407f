package queue

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Warm-up. A new dedicated IP has no sending history, and mailbox
// providers treat volume from an unknown ("cold") address as a key spam
// signal; starting small and growing steadily gives them time to watch the
// mail and how recipients engage with it, so the address builds a
// reputation gradually. See SendGrid, "Warming Up an IP Address"
// (https://www.twilio.com/docs/sendgrid/ui/sending-email/warming-up-an-ip-address)
// and Mailgun, "Automatic IP Warmup"
// (https://help.mailgun.com/hc/en-us/articles/8305731694747-Automatic-IP-Warmup).
//
// A Schedule is a daily cap per warm-up day; day 1 is the calendar day
// (UTC) the IP started warming, and after the schedule's last day the IP
// is unlimited. No standard fixes the figures. The "standard" schedule
// below is a conventional ESP-style ramp chosen for Mailbolt: roughly
// doubling through the first week, then about +50% a day, unlimited from
// day 29 (four weeks). Daily caps, messages per IP:
//
//	day   1–7:         50        100        200        400        800      1,500      3,000
//	day  8–14:      4,500      7,000     10,000     15,000     22,000     33,000     50,000
//	day 15–21:     75,000    110,000    165,000    250,000    375,000    550,000    800,000
//	day 22–28:  1,200,000  1,800,000  2,700,000  4,000,000  6,000,000  9,000,000 13,500,000
//	day 29– :   unlimited
//
// "none" has no cap at all (an IP that is already warm). A deployment or a
// test sets its own ramp with a compact list, "50,100,200,400": one cap per
// day, positive, never decreasing, at most MaxScheduleDays entries.
//
// Choosing the source IP (Pick): among the pool's IPs with headroom left
// today, the one that has sent the fewest messages today. That is
// round-robin kept in the counters instead of a cursor, so it needs no
// state and survives restarts. Picking the IP with the most headroom was
// rejected: a warm IP (or an older warming one) always has more headroom
// than a new one, so the new IP would send nothing, and would reach the
// end of its schedule by the calendar alone, without the history the ramp
// exists to build. When no IP of the pool has headroom the mail waits for
// NextReset; it never moves to another pool or to an IP outside the pool.

// DefaultWarmup names the schedule a dedicated IP gets unless the admin
// picks another.
const DefaultWarmup = "standard"

// MaxScheduleDays bounds a schedule's length: a ramp longer than about
// two months is a misconfiguration rather than a warm-up.
const MaxScheduleDays = 60

// ErrBadSchedule is wrapped by every ParseSchedule error.
var ErrBadSchedule = errors.New("invalid warm-up schedule")

// warmupSchedules are the named schedules, as data; the comment above
// prints "standard" and a test keeps the two equal.
var warmupSchedules = map[string][]int{
	"standard": {
		50, 100, 200, 400, 800, 1_500, 3_000,
		4_500, 7_000, 10_000, 15_000, 22_000, 33_000, 50_000,
		75_000, 110_000, 165_000, 250_000, 375_000, 550_000, 800_000,
		1_200_000, 1_800_000, 2_700_000, 4_000_000, 6_000_000, 9_000_000, 13_500_000,
	},
	"none": nil,
}

// Schedule is a warm-up ramp: the daily cap of an IP for each day since it
// started warming. The zero Schedule has no cap, like "none". A Schedule
// is a value: it never changes once made.
type Schedule struct {
	name string // "" for a list given by value
	caps []int  // caps[d-1] is day d's cap
}

// ScheduleNames lists the named schedules ParseSchedule accepts, sorted.
func ScheduleNames() []string {
	names := make([]string, 0, len(warmupSchedules))
	for name := range warmupSchedules {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// ParseSchedule reads a schedule: a name from ScheduleNames, or a compact
// list of daily caps such as "50,100,200,400" (day 1 first; unlimited
// after the last). What String returns parses back to the same schedule,
// so either form can be stored.
func ParseSchedule(s string) (Schedule, error) {
	s = strings.TrimSpace(s)
	if caps, ok := warmupSchedules[strings.ToLower(s)]; ok {
		return Schedule{name: strings.ToLower(s), caps: caps}, nil
	}
	if s == "" {
		return Schedule{}, fmt.Errorf("%w: empty (want a name such as %q or daily caps such as \"50,100,200\")", ErrBadSchedule, DefaultWarmup)
	}
	fields := strings.Split(s, ",")
	if len(fields) > MaxScheduleDays {
		return Schedule{}, fmt.Errorf("%w: %d days, at most %d", ErrBadSchedule, len(fields), MaxScheduleDays)
	}
	caps := make([]int, len(fields))
	for i, f := range fields {
		f = strings.TrimSpace(f)
		if f == "" || strings.Trim(f, "0123456789") != "" {
			return Schedule{}, fmt.Errorf("%w: day %d: %q is not a whole number", ErrBadSchedule, i+1, f)
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return Schedule{}, fmt.Errorf("%w: day %d: %s is too large", ErrBadSchedule, i+1, f)
		}
		if n == 0 {
			return Schedule{}, fmt.Errorf("%w: day %d: cap %d is not positive", ErrBadSchedule, i+1, n)
		}
		if i > 0 && n < caps[i-1] {
			return Schedule{}, fmt.Errorf("%w: day %d: cap %d is below day %d's %d", ErrBadSchedule, i+1, n, i, caps[i-1])
		}
		caps[i] = n
	}
	return Schedule{caps: caps}, nil
}

// Cap is the most messages an IP on warm-up day day may send; unlimited
// once the schedule is over (and always for "none"). Day 1 is the day the
// IP started warming; earlier days count as day 1.
func (s Schedule) Cap(day int) (limit int, unlimited bool) {
	day = max(day, 1)
	if day > len(s.caps) {
		return 0, true
	}
	return s.caps[day-1], false
}

// Days is the number of capped days: the IP is unlimited from day Days+1.
func (s Schedule) Days() int { return len(s.caps) }

// String is the schedule's name, or its compact list of caps.
func (s Schedule) String() string {
	switch {
	case s.name != "":
		return s.name
	case len(s.caps) == 0:
		return "none"
	}
	parts := make([]string, len(s.caps))
	for i, c := range s.caps {
		parts[i] = strconv.Itoa(c)
	}
	return strings.Join(parts, ",")
}

// WarmupDay is the warm-up day at now of an IP that started warming at
// start: 1 on the start's calendar day, 2 from the next midnight UTC, and
// so on. A start later than now (clock skew) gives day 1.
func WarmupDay(start, now time.Time) int { return WarmupDayIn(start, now, time.UTC) }

// WarmupDayIn is WarmupDay with calendar days in loc (nil means UTC). The
// count is by dates, so days of 23 or 25 hours across a DST change are
// still one day each.
func WarmupDayIn(start, now time.Time, loc *time.Location) int {
	if loc == nil {
		loc = time.UTC
	}
	return int(max(civilDay(now, loc)-civilDay(start, loc)+1, 1))
}

// civilDay numbers t's calendar date in loc: days since 1970-01-01.
func civilDay(t time.Time, loc *time.Location) int64 {
	y, m, d := t.In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// NextReset is the next midnight UTC after now, when daily counts start
// again: the time to defer mail to when every IP of its pool is at its
// cap. Daily counts must be kept per UTC date to agree with it.
func NextReset(now time.Time) time.Time { return NextResetIn(now, time.UTC) }

// NextResetIn is NextReset with days in loc (nil means UTC); the result is
// in loc.
func NextResetIn(now time.Time, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	y, m, d := now.In(loc).Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, loc)
}

// IPState is what Pick needs to know of one IP of a pool today.
type IPState struct {
	Addr      string
	Day       int // warm-up day, from WarmupDay
	SentToday int // messages sent through the IP since the last reset
	Schedule  Schedule
}

// Remaining is how many more messages the IP may send today; unlimited
// when its schedule is over or it has none.
func (ip IPState) Remaining() (n int, unlimited bool) {
	limit, unlimited := ip.Schedule.Cap(ip.Day)
	if unlimited {
		return 0, true
	}
	return max(limit-ip.SentToday, 0), false
}

// Pick chooses the IP of a pool to send the next message from: among the
// IPs with headroom today, the one that has sent the fewest messages today
// (the first of them on a tie). ok is false, and index -1, when every IP
// is at its cap (or ips is empty): the mail then waits for NextReset. The
// caller adds the message to the chosen IP's count.
func Pick(ips []IPState) (index int, ok bool) {
	index = -1
	for i, ip := range ips {
		if n, unlimited := ip.Remaining(); !unlimited && n == 0 {
			continue
		}
		if index < 0 || ip.SentToday < ips[index].SentToday {
			index = i
		}
	}
	return index, index >= 0
}
