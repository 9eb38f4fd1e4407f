package web

import (
	"net/http"
	"time"

	"mailbolt/app"
)

// The IP routes list what the calling account sends from. They are not
// paginated: an account holds at most its plan's dedicated IPs (10 on
// enterprise) and sees one entry per pool it may name.

type ipView struct {
	Address        string    `json:"address"`
	Hostname       string    `json:"hostname"`
	Pool           string    `json:"pool"`
	WarmupSchedule string    `json:"warmup_schedule"`
	WarmupDay      int       `json:"warmup_day"`
	WarmupDays     int       `json:"warmup_days"`
	Warming        bool      `json:"warming"`
	DailyCap       *int      `json:"daily_cap"`
	SentToday      int       `json:"sent_today"`
	AddedAt        time.Time `json:"added_at"`
}

func viewIP(s app.IPStatus) ipView {
	return ipView{Address: s.Address, Hostname: s.Hostname, Pool: s.Pool, WarmupSchedule: s.Warmup,
		WarmupDay: s.WarmupDay, WarmupDays: s.WarmupDays, Warming: s.DailyCap != nil, DailyCap: s.DailyCap,
		SentToday: s.SentToday, AddedAt: s.AddedAt.UTC()}
}

type poolView struct {
	Name      string   `json:"name"`
	Dedicated bool     `json:"dedicated"`
	Addresses []string `json:"addresses"`
}

// listIPs lists the IPs dedicated to the calling account with today's
// warm-up state.
func (s *Server) listIPs(w http.ResponseWriter, r *http.Request, c *call) {
	ips, e := s.app.AccountIPs(c.Principal)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	data := make([]ipView, len(ips))
	for i, ip := range ips {
		data[i] = viewIP(ip)
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data})
}

// listPools lists the pools the calling account may name as ip_pool, with
// the addresses a message naming each would leave from.
func (s *Server) listPools(w http.ResponseWriter, r *http.Request, c *call) {
	pools, e := s.app.AccountPools(c.Principal)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	data := make([]poolView, len(pools))
	for i, p := range pools {
		data[i] = poolView{Name: p.Name, Dedicated: p.Dedicated, Addresses: p.Addresses}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data})
}
