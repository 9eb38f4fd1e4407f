package app

import (
	"fmt"
	"sort"
	"strings"

	"mailbolt/storage"
)

// Plan is what an account may do: its request rate per API key, its batch
// size and how many dedicated IPs it is entitled to.
type Plan struct {
	Name         string
	RateLimit    int // requests per second per API key
	BatchSize    int // messages per batch request
	DedicatedIPs int
}

// plans holds the spec's §8 table; scale sits between growth and business.
// Enterprise values are defaults that each account may override.
var plans = map[string]Plan{
	"free":       {"free", 10, 100, 0},
	"developer":  {"developer", 100, 500, 0},
	"pro":        {"pro", 100, 500, 0},
	"growth":     {"growth", 500, 1000, 1},
	"scale":      {"scale", 500, 1000, 3},
	"business":   {"business", 500, 1000, 0},
	"enterprise": {"enterprise", 1000, 5000, 10},
}

// DefaultPlan is given to accounts created without --plan.
const DefaultPlan = "free"

// PlanNames lists the plans in a stable order, for help and errors.
func PlanNames() []string {
	names := make([]string, 0, len(plans))
	for n := range plans {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		return plans[names[i]].RateLimit < plans[names[j]].RateLimit || plans[names[i]].RateLimit == plans[names[j]].RateLimit && names[i] < names[j]
	})
	return names
}

// LookupPlan finds a plan by name.
func LookupPlan(name string) (Plan, error) {
	p, ok := plans[strings.ToLower(name)]
	if !ok {
		return Plan{}, fmt.Errorf("unknown plan %q (one of %s)", name, strings.Join(PlanNames(), ", "))
	}
	return p, nil
}

// Limits are the effective limits of one account: its plan's, with the
// account's own overrides applied.
func Limits(a storage.Account) Plan {
	p := plans[a.Plan]
	if a.RateLimit > 0 {
		p.RateLimit = a.RateLimit
	}
	if a.BatchSize > 0 {
		p.BatchSize = a.BatchSize
	}
	return p
}

// inboundPerDay is how many messages an account of each plan may receive
// per UTC day on its inbound domains (docs/inbound.md): a catch-all route
// must not fill the disk. Over it, the listener answers 452 until the
// next day.
var inboundPerDay = map[string]int{
	"free": 100, "developer": 1_000, "pro": 5_000, "growth": 20_000,
	"scale": 50_000, "business": 50_000, "enterprise": 100_000,
}

// InboundQuota is the daily inbound quota of an account.
func InboundQuota(a storage.Account) int {
	if n, ok := inboundPerDay[a.Plan]; ok {
		return n
	}
	return inboundPerDay[DefaultPlan]
}
