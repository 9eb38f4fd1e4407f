package web

import (
	"net/http"
	"net/url"
	"time"

	"mailbolt/app"
)

type summaryView struct {
	From       string          `json:"from"`
	To         string          `json:"to"`
	Mode       string          `json:"mode"`
	CampaignID *string         `json:"campaign_id"`
	Domain     *string         `json:"domain"`
	Stream     *string         `json:"stream"`
	Totals     app.Counts      `json:"totals"`
	Rates      app.Rates       `json:"rates"`
	Daily      []app.DayCounts `json:"daily"`
}

// dayParam reads a day as YYYY-MM-DD or an RFC 3339 time (its UTC day).
func dayParam(q url.Values, name string, def time.Time) (time.Time, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	return time.Time{}, app.Validation(name, "must be a date such as 2026-11-01 or an RFC 3339 time")
}

func (s *Server) analyticsSummary(w http.ResponseWriter, r *http.Request, c *call) {
	q, e := queryOf(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	now := s.app.Now()
	to, e := dayParam(q, "to", now)
	if e == nil {
		var from time.Time
		if from, e = dayParam(q, "from", to.AddDate(0, 0, -29)); e == nil {
			sq := app.SummaryQuery{From: from, To: to, CampaignID: q.Get("campaign_id"), Domain: q.Get("domain"),
				Stream: q.Get("stream")}
			var sum app.Summary
			if sum, e = s.app.AnalyticsSummary(c.Principal, sq); e == nil {
				v := summaryView{From: from.UTC().Format(time.DateOnly), To: to.UTC().Format(time.DateOnly), Mode: "live",
					Totals: sum.Totals, Rates: sum.Rates, Daily: sum.Daily}
				if c.Test {
					v.Mode = "test"
				}
				if sq.CampaignID != "" {
					v.CampaignID = &sq.CampaignID
				}
				if sq.Domain != "" {
					v.Domain = &sq.Domain
				}
				if sq.Stream != "" {
					v.Stream = &sq.Stream
				}
				writeJSON(w, http.StatusOK, v)
				return
			}
		}
	}
	s.writeError(w, r, e)
}
