package app

import (
	"strings"
	"time"

	"mailbolt/storage"
)

// MaxSummaryDays is the longest window one analytics summary covers.
const MaxSummaryDays = 366

// SummaryQuery selects an analytics summary: a window of whole UTC days and
// at most one dimension.
type SummaryQuery struct {
	From, To   time.Time // days, inclusive
	CampaignID string
	Domain     string
	// Stream is transactional or broadcast; counted from the version
	// that brought streams on (earlier mail is in no stream's counts).
	Stream string
}

// Counts are the totals of one day or of the window. Recipients, not
// messages, are counted: a message to three recipients is sent three times.
type Counts struct {
	Sent          uint64       `json:"sent"`
	Delivered     uint64       `json:"delivered"`
	Bounced       BounceCounts `json:"bounced"`
	Opened        uint64       `json:"opened"`
	UniqueOpened  uint64       `json:"unique_opened"`
	Clicked       uint64       `json:"clicked"`
	UniqueClicked uint64       `json:"unique_clicked"`
	Complained    uint64       `json:"complained"`
	Unsubscribed  uint64       `json:"unsubscribed"`
}

// BounceCounts split bounces by type.
type BounceCounts struct {
	Total uint64 `json:"total"`
	Hard  uint64 `json:"hard"`
	Soft  uint64 `json:"soft"`
	Block uint64 `json:"block"`
}

// Rates are ratios (0 when the denominator is 0): delivery and bounce per
// sent, open, click and complaint per delivered (unique opens and clicks).
// A window can hold opens or bounces of mail sent before it, so a rate can
// exceed 1.
type Rates struct {
	Delivery  float64 `json:"delivery"`
	Open      float64 `json:"open"`
	Click     float64 `json:"click"`
	Bounce    float64 `json:"bounce"`
	Complaint float64 `json:"complaint"`
}

// DayCounts is one day of the series.
type DayCounts struct {
	Date string `json:"date"`
	Counts
}

// Summary is the analytics summary of a window.
type Summary struct {
	Totals Counts
	Rates  Rates
	Daily  []DayCounts
}

func countsOf(st storage.Stats) Counts {
	c := Counts{Sent: st[storage.StatSent], Delivered: st[storage.StatDelivered],
		Bounced: BounceCounts{Hard: st[storage.StatBouncedHard], Soft: st[storage.StatBouncedSoft], Block: st[storage.StatBouncedBlock]},
		Opened:  st[storage.StatOpened], UniqueOpened: st[storage.StatUniqueOpened], Clicked: st[storage.StatClicked],
		UniqueClicked: st[storage.StatUniqueClicked], Complained: st[storage.StatComplained], Unsubscribed: st[storage.StatUnsubscribed]}
	c.Bounced.Total = c.Bounced.Hard + c.Bounced.Soft + c.Bounced.Block
	return c
}

func (c *Counts) add(o Counts) {
	c.Sent += o.Sent
	c.Delivered += o.Delivered
	c.Bounced.Total += o.Bounced.Total
	c.Bounced.Hard += o.Bounced.Hard
	c.Bounced.Soft += o.Bounced.Soft
	c.Bounced.Block += o.Bounced.Block
	c.Opened += o.Opened
	c.UniqueOpened += o.UniqueOpened
	c.Clicked += o.Clicked
	c.UniqueClicked += o.UniqueClicked
	c.Complained += o.Complained
	c.Unsubscribed += o.Unsubscribed
}

func ratio(n, d uint64) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// AnalyticsSummary reads the caller's counters (of its key's mode) for a
// window: a walk over its days, never over events.
func (a *App) AnalyticsSummary(p Principal, q SummaryQuery) (Summary, error) {
	if err := a.authorize(p, ScopeAnalyticsRead); err != nil {
		return Summary{}, err
	}
	from, to := storage.StatDay(q.From), storage.StatDay(q.To)
	if to < from {
		return Summary{}, Validation("to", "must not be before from")
	}
	if to-from >= MaxSummaryDays {
		return Summary{}, Validation("from", "the window is at most 366 days")
	}
	dim := ""
	var given []string
	for _, p := range [...]struct{ name, value string }{{"campaign_id", q.CampaignID}, {"domain", q.Domain}, {"stream", q.Stream}} {
		if p.value != "" {
			given = append(given, p.name)
		}
	}
	switch {
	case len(given) > 1:
		// Named after the second one given: a parameter of the request,
		// whichever two (or three) it holds.
		return Summary{}, Validation(given[1], "give at most one of campaign_id, domain and stream, not "+strings.Join(given, " and "))
	case q.Stream != "":
		if q.Stream != storage.StreamTransactional && q.Stream != storage.StreamBroadcast {
			return Summary{}, Validation("stream", "must be transactional or broadcast")
		}
		dim = "s:" + q.Stream
	case q.CampaignID != "":
		dim = "c:" + q.CampaignID
	case q.Domain != "":
		d, e := NormalizeDomain("domain", q.Domain)
		if e != nil {
			return Summary{}, e
		}
		dim = "d:" + d
	}
	var days map[uint32]storage.Stats
	err := a.db.View(func(tx *storage.Tx) error {
		days = tx.StatsRange(p.Account.ID, p.Test, dim, from, to)
		return nil
	})
	if err != nil {
		return Summary{}, Internal(err)
	}
	var s Summary
	s.Daily = make([]DayCounts, 0, to-from+1)
	for d := from; d <= to; d++ {
		c := countsOf(days[d])
		s.Totals.add(c)
		s.Daily = append(s.Daily, DayCounts{Date: time.Unix(int64(d)*86400, 0).UTC().Format(time.DateOnly), Counts: c})
	}
	t := s.Totals
	s.Rates = Rates{Delivery: ratio(t.Delivered, t.Sent), Bounce: ratio(t.Bounced.Total, t.Sent),
		Open: ratio(t.UniqueOpened, t.Delivered), Click: ratio(t.UniqueClicked, t.Delivered),
		Complaint: ratio(t.Complained, t.Delivered)}
	return s, nil
}
