package web

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"mailbolt/app"
	"mailbolt/storage"
)

// overviewDays is the Overview's window: the last 30 UTC days, today
// included.
const overviewDays = 30

// chart is one metric's daily series, drawn on the server as SVG bars (no
// script): Bars are in a 300×80 view box, tallest bar full height.
type chart struct {
	Name  string
	Total uint64
	Max   uint64
	Label string // the chart's accessible description
	Bars  []bar
}

type bar struct {
	X, Y, W, H float64
	Title      string // the day and its count, shown on hover
}

// chartOf draws the series value(day) over days.
func chartOf(name string, days []app.DayCounts, value func(app.Counts) uint64) chart {
	c := chart{Name: name}
	for _, d := range days {
		v := value(d.Counts)
		c.Total += v
		c.Max = max(c.Max, v)
	}
	const width, height = 300.0, 80.0
	w := width / float64(max(len(days), 1))
	for i, d := range days {
		v := value(d.Counts)
		h := 0.0
		if c.Max > 0 {
			h = height * float64(v) / float64(c.Max)
		}
		if v > 0 && h < 1 {
			h = 1 // a day with any mail shows
		}
		c.Bars = append(c.Bars, bar{X: float64(i) * w, Y: height - h, W: w * 0.8, H: h,
			Title: fmt.Sprintf("%s: %d", d.Date, v)})
	}
	first, last := "", ""
	if len(days) > 0 {
		first, last = days[0].Date, days[len(days)-1].Date
	}
	c.Label = fmt.Sprintf("%s per day from %s to %s: %d in all, at most %d in a day", name, first, last, c.Total, c.Max)
	return c
}

// overviewData is what the Overview shows.
type overviewData struct {
	From, To string
	Charts   []chart
	Bounced  app.BounceCounts
	Rates    app.Rates
	CanRead  bool // the role may read analytics
	// Queue is the account's part of the message queue (nil when the
	// role may not read messages).
	Queue *app.QueueSummary
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request, sess app.Session) {
	d := overviewData{CanRead: app.HasScope(sess.Principal.Scopes, app.ScopeAnalyticsRead)}
	if d.CanRead {
		to := s.app.Now().UTC()
		from := to.AddDate(0, 0, -(overviewDays - 1))
		sum, err := s.app.AnalyticsSummary(sess.Principal, app.SummaryQuery{From: from, To: to})
		if err != nil {
			s.fail(w, sess, err)
			return
		}
		d.From, d.To = from.Format(time.DateOnly), to.Format(time.DateOnly)
		d.Bounced, d.Rates = sum.Totals.Bounced, sum.Rates
		for _, m := range []struct {
			name  string
			value func(app.Counts) uint64
		}{
			{"Sent", func(c app.Counts) uint64 { return c.Sent }},
			{"Delivered", func(c app.Counts) uint64 { return c.Delivered }},
			{"Bounced", func(c app.Counts) uint64 { return c.Bounced.Total }},
			{"Opened", func(c app.Counts) uint64 { return c.Opened }},
			{"Clicked", func(c app.Counts) uint64 { return c.Clicked }},
			{"Complained", func(c app.Counts) uint64 { return c.Complained }},
		} {
			d.Charts = append(d.Charts, chartOf(m.name, sum.Daily, m.value))
		}
	}
	if app.HasScope(sess.Principal.Scopes, app.ScopeMessagesRead) {
		q, err := s.app.QueueSummary(sess.Principal)
		if err != nil {
			s.fail(w, sess, err)
			return
		}
		d.Queue = &q
	}
	s.render(w, http.StatusOK, "overview", s.pageOf(sess, "Overview", page{Data: d}))
}

// messagesBudget is how many messages one page of the Messages list reads
// at most (tests lower it).
var messagesBudget = app.DefaultSearchBudget

// messagesData is one page of the Messages list with its filters.
type messagesData struct {
	Query    url.Values
	Statuses []string
	Messages []storage.Message
	Next     template.URL // the next page's address: the filters and the cursor
	// Spent is true when the page's budget ran out before it was full:
	// the account was searched down to Reached, and Next continues.
	Spent    bool
	Reached  string
	Examined int
}

// messagesPage lists the account's (live) messages, newest first, filtered
// like GET /v1/messages (exact recipient, status, tag, campaign, stream,
// a time range) and by a subject prefix, a page at a time. Each page reads
// at most app.DefaultSearchBudget messages (SearchMessages), so a filter
// that matches few of many messages answers "searched down to …;
// continue" rather than walking them all.
func (s *Server) messagesPage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	q := r.URL.Query()
	mq := app.MessageQuery{Status: q.Get("status"), CampaignID: strings.TrimSpace(q.Get("campaign_id")),
		Tag: strings.TrimSpace(q.Get("tag")), Stream: q.Get("stream"),
		Recipient: strings.ToLower(strings.TrimSpace(q.Get("recipient")))}
	search := app.MessageSearch{MessageQuery: mq, SubjectPrefix: q.Get("subject"), Budget: messagesBudget}
	var err error
	switch {
	case mq.Status != "" && !slices.Contains(app.MessageStatuses, mq.Status):
		err = app.Validation("status", "must be one of "+strings.Join(app.MessageStatuses, ", "))
	default:
		err = app.CheckStream("stream", mq.Stream)
	}
	if err == nil {
		if mq.Since, err = timeParam(q, "since"); err == nil {
			mq.Until, err = timeParam(q, "until")
		}
	}
	pq, perr := s.parsePage(r, listName[storage.Message]()+" search")
	if err == nil {
		err = perr
	}
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	search.MessageQuery = mq
	list, res, err := s.app.SearchMessages(sess.Principal, search, pq.options())
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	d := messagesData{Query: q, Statuses: app.MessageStatuses, Messages: list, Spent: res.Spent, Examined: res.Examined}
	if res.Spent {
		d.Reached = res.Reached.UTC().Format("2006-01-02 15:04:05")
	}
	if res.HasMore {
		next := url.Values{}
		for k, v := range q {
			if k != "cursor" && k != "page" {
				next[k] = v
			}
		}
		next.Set("cursor", s.cursor(listName[storage.Message]()+" search", res.Next))
		// Built from url.Values.Encode, so it is a plain relative URL:
		// safe to use as is, where the template would escape its & and =.
		d.Next = template.URL("/dashboard/messages?" + next.Encode())
	}
	s.render(w, http.StatusOK, "messages", s.pageOf(sess, "Messages", page{Data: d}))
}
