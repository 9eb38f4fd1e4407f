package storage

// Domain states, as stored in Domain.Status and the domain_status index.
const (
	DomainPending  = "pending"  // created; its records have not verified yet
	DomainVerified = "verified" // DKIM and SPF are in place: mail may be sent from it
	DomainFailed   = "failed"   // was verified, then a check found its records gone
)

// ActiveKey is the key that signs the domain's mail: the one activated last
// and not retired.
func (d Domain) ActiveKey() (DomainKey, bool) {
	var best DomainKey
	found := false
	for _, k := range d.DKIMKeys {
		if k.ActivatedAt != nil && k.RetiredAt == nil && (!found || k.ActivatedAt.After(*best.ActivatedAt)) {
			best, found = k, true
		}
	}
	return best, found
}
