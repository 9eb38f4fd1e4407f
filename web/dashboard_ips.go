package web

import (
	"fmt"
	"net/http"

	"mailbolt/app"
	"mailbolt/storage"
)

// ipRow is one dedicated IP with its warm-up drawn as two bars in a 300×28
// view box: the top one today's sends against today's cap (full when the
// cap is reached; empty with no cap), the bottom one the warm-up day
// against the schedule's capped days.
type ipRow struct {
	app.IPStatus
	SentW, DayW float64
	Warming     bool
	Label       string // the bars' accessible description
}

const ipBarWidth = 300.0

func ipRowOf(st app.IPStatus) ipRow {
	r := ipRow{IPStatus: st, Warming: st.DailyCap != nil}
	if st.DailyCap != nil && *st.DailyCap > 0 {
		r.SentW = ipBarWidth * min(1, float64(st.SentToday)/float64(*st.DailyCap))
	}
	if st.WarmupDays > 0 {
		r.DayW = ipBarWidth * min(1, float64(st.WarmupDay)/float64(st.WarmupDays))
	} else {
		r.DayW = ipBarWidth
	}
	if r.Warming {
		r.Label = fmt.Sprintf("%s: warm-up day %d of %d; %d sent today of a cap of %d",
			st.Address, st.WarmupDay, st.WarmupDays, st.SentToday, *st.DailyCap)
	} else {
		r.Label = fmt.Sprintf("%s: warmed up (day %d); %d sent today, no cap", st.Address, st.WarmupDay, st.SentToday)
	}
	return r
}

// ipsData is the IPs page: the account's dedicated IPs and the pools it may
// send from.
type ipsData struct {
	IPs   []ipRow
	Pools []app.AccountPool
}

func (s *Server) ipsPage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	ips, err := s.app.AccountIPs(sess.Principal)
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	pools, err := s.app.AccountPools(sess.Principal)
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	d := ipsData{Pools: pools}
	for _, st := range ips {
		d.IPs = append(d.IPs, ipRowOf(st))
	}
	s.render(w, http.StatusOK, "ips", s.pageOf(sess, "IPs and pools", page{Data: d}))
}

// accountData is the Account page.
type accountData struct {
	Account storage.Account
	Limits  app.Plan
}

func (s *Server) accountPage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	acct, err := s.app.Account(sess.Principal)
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	s.render(w, http.StatusOK, "account", s.pageOf(sess, "Account", page{Data: accountData{Account: acct, Limits: app.Limits(acct)}}))
}
