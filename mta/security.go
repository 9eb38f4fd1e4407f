package mta

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"

	"mailbolt/mta/dns"
	"mailbolt/mta/tlspolicy"
)

// Transport security of MX sessions (docs/delivery.md, "Transport
// security"), decided per hop before it is dialed:
//
//   - DANE (RFC 7672), when Options.DANE is set (--dnssec): an MX host
//     named by a DNSSEC-validated MX answer whose _25._tcp TLSA records are
//     validated too must present a certificate that one of them matches
//     (DANE-EE: the leaf, with no name or expiry check; DANE-TA: a
//     certificate of the chain it sends, from which the leaf chains and is
//     valid for the MX name). DANE wins over MTA-STS.
//   - MTA-STS (RFC 8461), when Options.STS is set: in enforce mode only MX
//     hosts the policy lists are tried, each only over TLS with a
//     certificate that the roots (system and --tls-roots) trust for the MX
//     name; in testing mode delivery goes on as without a policy and the
//     failure is only recorded.
//   - Otherwise opportunistic TLS (RFC 7435): STARTTLS when offered, any
//     certificate, cleartext when the handshake fails. The certificate is
//     still checked, to report whether it was verified.
//
// Under a policy there is no cleartext fallback: a hop that offers no
// STARTTLS or whose certificate fails is given up with a temporary failure
// that names the policy, so the message is retried until its queue
// lifetime ends and then bounces. With a Relay, recipient domains'
// policies are not evaluated: the relay delivers.

// STSSource gives a recipient domain's MTA-STS policy (mta/transport
// fetches and caches them). A nil policy means none applies.
type STSSource interface {
	STSPolicy(ctx context.Context, domain string) (*tlspolicy.Policy, error)
}

// DANEResolver is the DNS of DANE: MX and TLSA answers with their AD bit.
// *dns.Resolver is one.
type DANEResolver interface {
	LookupMXSecure(ctx context.Context, name string) ([]*net.MX, bool, error)
	LookupTLSA(ctx context.Context, name string) ([]dns.TLSA, bool, error)
}

// TLS policies a session ran under, as GET /v1/messages/{id} shows them.
const (
	PolicyNone   = "none"
	PolicyMTASTS = "mta-sts"
	PolicyDANE   = "dane"
)

// TLSOutcome is one new MX session's TLS result for TLS reporting
// (RFC 8460): the recipient domain, the policy type and, when it failed,
// the result type.
type TLSOutcome struct {
	Domain string
	// Policy is the report's policy-type: "sts", "tlsa" or
	// "no-policy-found".
	Policy   string
	MX       string
	Failure  string // RFC 8460 §4.3 result type; empty on success
	Detail   string // what failed, for the log
	PolicyID string // the MTA-STS record's id
}

// security is what a hop's session must meet.
type security struct {
	domain  string
	policy  string // PolicyNone, PolicyMTASTS or PolicyDANE
	enforce bool   // no cleartext, no unverified certificate
	sts     *tlspolicy.Policy
	tlsa    []dns.TLSA
	// requireTLS is a REQUIRETLS message (RFC 8689): verified TLS and the
	// REQUIRETLS extension, or a permanent failure.
	requireTLS bool
}

// key tells pooled sessions apart: one made under a weaker requirement is
// not reused for a stronger one.
func (s security) key() string {
	k := s.policy
	if s.enforce {
		k += "!"
	}
	if s.requireTLS {
		k += "+requiretls"
	}
	return k
}

// name describes the policy for failure texts.
func (s security) name() string {
	switch s.policy {
	case PolicyDANE:
		return "the DANE TLSA records of the MX host"
	case PolicyMTASTS:
		return fmt.Sprintf("the MTA-STS policy of %s (id %s, mode %s)", s.domain, s.sts.ID, s.sts.Mode)
	}
	return "REQUIRETLS"
}

func (s security) reportPolicy() string {
	switch s.policy {
	case PolicyDANE:
		return "tlsa"
	case PolicyMTASTS:
		return "sts"
	}
	return "no-policy-found"
}

// domainPolicy returns the MTA-STS policy of a recipient domain, or nil.
// A policy that cannot be had counts as none (RFC 8461 §5: senders
// deliver as before when no valid policy is found).
func (d *Deliverer) domainPolicy(ctx context.Context, domain string) *tlspolicy.Policy {
	if d.opts.STS == nil || d.opts.Relay != nil || strings.HasPrefix(domain, "[") {
		return nil
	}
	p, err := d.opts.STS.STSPolicy(ctx, domain)
	if err != nil {
		d.logger().Debug("no MTA-STS policy", "domain", domain, "err", err)
		return nil
	}
	if p != nil && p.Mode == tlspolicy.ModeNone {
		return nil
	}
	return p
}

// hopSecurity decides what the session with hop must meet. An error gives
// the hop up (an MX host that an enforced policy does not list, a TLSA
// lookup that failed for a signed host).
func (d *Deliverer) hopSecurity(ctx context.Context, domain string, hop Hop, sts *tlspolicy.Policy, requireTLS bool) (security, error) {
	sec := security{domain: domain, policy: PolicyNone, requireTLS: requireTLS}
	if hop.Relay {
		return sec, nil
	}
	if d.opts.DANE != nil && hop.Secure {
		recs, secure, err := d.opts.DANE.LookupTLSA(ctx, "_25._tcp."+hop.Host)
		switch {
		case err != nil && !errors.Is(err, dns.ErrNotFound):
			d.report(TLSOutcome{Domain: domain, Policy: "tlsa", MX: hop.Host, Failure: "dnssec-invalid", Detail: err.Error()})
			return sec, &DeliveryError{Enhanced: "4.7.5", Text: fmt.Sprintf("TLSA lookup for MX host %s failed (DANE): %v", hop.Host, err), Host: hop.Host}
		case err == nil && secure:
			var usable []dns.TLSA
			for _, r := range recs {
				if (r.Usage == 2 || r.Usage == 3) && r.Selector <= 1 && r.MatchingType <= 2 {
					usable = append(usable, r)
				}
			}
			if len(usable) == 0 {
				// RFC 7672 §2.2: TLSA records that are all unusable still
				// mean TLS is required, without authentication.
				sec.policy, sec.enforce = PolicyDANE, true
				return sec, nil
			}
			sec.policy, sec.enforce, sec.tlsa = PolicyDANE, true, usable
			return sec, nil
		}
	}
	if sts != nil {
		sec.policy, sec.sts = PolicyMTASTS, sts
		sec.enforce = sts.Mode == tlspolicy.ModeEnforce
		if !sts.Matches(hop.Host) {
			d.report(TLSOutcome{Domain: domain, Policy: "sts", MX: hop.Host, Failure: "validation-failure", PolicyID: sts.ID,
				Detail: fmt.Sprintf("MX host %s is not listed by the policy", hop.Host)})
			if sec.enforce {
				return sec, &DeliveryError{Enhanced: "4.7.5", Host: hop.Host,
					Text: fmt.Sprintf("MX host %s does not match %s", hop.Host, sec.name())}
			}
		}
	}
	return sec, nil
}

func (d *Deliverer) report(o TLSOutcome) {
	if d.opts.OnTLS != nil {
		d.opts.OnTLS(o)
	}
}

// mxTLS is the TLS configuration of an MX session under sec. The
// handshake itself accepts any certificate; VerifyConnection checks it
// (PKIX for the MX name, or the TLSA records) and sets *verified, failing
// the handshake only when sec is enforced.
func (d *Deliverer) mxTLS(host string, sec security, verified *bool, failure *string) *tls.Config {
	return &tls.Config{ServerName: host, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12,
		VerifyConnection: func(cs tls.ConnectionState) error {
			var err error
			if sec.policy == PolicyDANE {
				err = verifyDANE(cs, host, sec.tlsa, d.opts.RootCAs)
			} else {
				err = verifyPKIX(cs, host, d.opts.RootCAs)
			}
			*verified = err == nil
			if err != nil {
				*failure = failureType(err, sec.policy == PolicyDANE)
				if sec.enforce || sec.requireTLS {
					return err
				}
			}
			return nil
		}}
}

// verifyPKIX checks the chain the server sent against roots (nil: the
// system's) for host.
func verifyPKIX(cs tls.ConnectionState, host string, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{DNSName: host, Roots: roots, Intermediates: inter})
	return err
}

// verifyDANE checks the chain against TLSA records (RFC 7672 §3.1):
// DANE-EE matches the leaf alone; DANE-TA a certificate of the chain,
// which then serves as the root for the leaf, valid for host. With no
// usable record, any certificate will do (TLS is still required).
func verifyDANE(cs tls.ConnectionState, host string, recs []dns.TLSA, _ *x509.CertPool) error {
	certs := cs.PeerCertificates
	if len(certs) == 0 {
		return errors.New("no certificate")
	}
	if len(recs) == 0 {
		return nil
	}
	for _, r := range recs {
		switch r.Usage {
		case 3:
			if tlsaMatches(r, certs[0]) {
				return nil
			}
		case 2:
			for i, c := range certs {
				if !tlsaMatches(r, c) {
					continue
				}
				if i == 0 {
					// The leaf named as trust anchor: nothing to chain.
					if certs[0].VerifyHostname(host) == nil {
						return nil
					}
					continue
				}
				roots, inter := x509.NewCertPool(), x509.NewCertPool()
				roots.AddCert(c)
				for _, ic := range certs[1:i] {
					inter.AddCert(ic)
				}
				if _, err := certs[0].Verify(x509.VerifyOptions{DNSName: host, Roots: roots, Intermediates: inter}); err == nil {
					return nil
				}
			}
		}
	}
	return daneMismatch{host}
}

type daneMismatch struct{ host string }

func (e daneMismatch) Error() string {
	return fmt.Sprintf("no TLSA record of %s matches the certificate it presented", e.host)
}

// tlsaMatches reports whether a TLSA record names a certificate.
func tlsaMatches(r dns.TLSA, c *x509.Certificate) bool {
	data := c.Raw
	if r.Selector == 1 {
		data = c.RawSubjectPublicKeyInfo
	}
	switch r.MatchingType {
	case 0:
		return bytes.Equal(data, r.Data)
	case 1:
		h := sha256.Sum256(data)
		return bytes.Equal(h[:], r.Data)
	case 2:
		h := sha512.Sum512(data)
		return bytes.Equal(h[:], r.Data)
	}
	return false
}

// failureType names a certificate failure as RFC 8460 §4.3 does.
func failureType(err error, dane bool) string {
	var host x509.HostnameError
	var inv x509.CertificateInvalidError
	var unk x509.UnknownAuthorityError
	switch {
	case dane:
		return "validation-failure"
	case errors.As(err, &host):
		return "certificate-host-mismatch"
	case errors.As(err, &inv) && inv.Reason == x509.Expired:
		return "certificate-expired"
	case errors.As(err, &unk):
		return "certificate-not-trusted"
	}
	return "validation-failure"
}

// securityError is a hop given up because its session could not meet sec.
// Temporary under a policy (the message is retried until its lifetime
// ends); permanent for a REQUIRETLS message (RFC 8689 §5: 5.7.30).
func securityError(host string, sec security, format string, args ...any) *DeliveryError {
	text := fmt.Sprintf(format, args...)
	if sec.requireTLS && sec.policy == PolicyNone {
		return &DeliveryError{Enhanced: "5.7.30", Host: host, Permanent: true,
			Text: "REQUIRETLS: " + text}
	}
	e := &DeliveryError{Enhanced: "4.7.5", Host: host, Text: fmt.Sprintf("%s, required by %s", text, sec.name())}
	if sec.requireTLS {
		e.Enhanced, e.Permanent = "5.7.30", true
		e.Text += "; the message requires TLS (REQUIRETLS)"
	}
	return e
}

// checkSecurity judges an MX session once its handshake is done: under a
// policy it must run over TLS (a certificate that failed has already failed
// the handshake); a REQUIRETLS message needs verified TLS and the
// REQUIRETLS extension. It reports the session for TLS reports.
func (c *smtpConn) checkSecurity(hop Hop, sec security, tryTLS bool, failure string) error {
	d := c.d
	switch {
	case !c.tls && (sec.enforce || sec.requireTLS):
		d.reportSession(hop, sec, "starttls-not-supported", "no STARTTLS offered")
		return securityError(hop.Host, sec, "MX host %s offers no STARTTLS", hop.Host)
	case !tryTLS:
		// The cleartext retry of a failed handshake: the failure was
		// reported with the handshake.
	case !c.tls:
		d.reportSession(hop, sec, "starttls-not-supported", "no STARTTLS; delivered in cleartext")
	case c.tls && !c.verified && sec.policy != PolicyNone:
		d.reportSession(hop, sec, failure, "certificate not verified")
	default:
		d.reportSession(hop, sec, "", "")
	}
	if sec.requireTLS {
		// RFC 8689 §4.2.1: the MX host must itself be authenticated, named
		// by a DNSSEC-validated answer or listed by an MTA-STS policy; a
		// verified certificate for a name an attacker put in the MX answer
		// proves nothing. (A relay is the operator's own choice.)
		if !hop.Relay && !hop.Secure && (sec.sts == nil || !sec.sts.Matches(hop.Host)) {
			return securityError(hop.Host, sec, "MX host %s is named neither by a DNSSEC-validated answer nor by an MTA-STS policy", hop.Host)
		}
		if !c.verified {
			return securityError(hop.Host, sec, "the certificate of MX host %s is not verified", hop.Host)
		}
		if !c.has("REQUIRETLS") {
			return securityError(hop.Host, sec, "MX host %s does not offer REQUIRETLS", hop.Host)
		}
	}
	return nil
}

// reportSession tells OnTLS the outcome of a new MX session.
func (d *Deliverer) reportSession(hop Hop, sec security, failure, detail string) {
	if hop.Relay {
		return
	}
	o := TLSOutcome{Domain: sec.domain, Policy: sec.reportPolicy(), MX: hop.Host, Failure: failure, Detail: detail}
	if sec.sts != nil {
		o.PolicyID = sec.sts.ID
	}
	d.report(o)
}
