package app

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"mailbolt/grader"
	"mailbolt/grader/content"
	"mailbolt/mta/inbound"
	"mailbolt/mta/queue"
	"mailbolt/storage"
)

// Mail for inbound domains: the listener takes it for a routed address of
// a verified inbound domain, and this file turns it into an email.received
// event for the route's webhook, stored with the raw message in the
// transaction that must commit before the SMTP 250.

// MaxInboundAttachment is the largest attachment (decoded) an
// email.received event carries; larger ones are listed without content,
// and the raw message has them.
const MaxInboundAttachment = 1 << 20

// InboundRawPath is the API path of a received message's raw bytes.
func InboundRawPath(id string) string { return "/v1/inbound/messages/" + id + "/raw" }

// routed is a recipient of an inbound domain with the route it takes.
type routed struct {
	rcpt    string
	domain  storage.InboundDomain
	route   storage.InboundRoute
	webhook storage.Webhook
}

// errNotInbound: the address is at no verified inbound domain.
var errNotInbound = errors.New("not an address of a verified inbound domain")

// unrouted is the refusal of an address at a verified inbound domain that
// no route takes (RFC 3463 5.1.1: bad destination mailbox address).
func unrouted(rcpt string) error {
	return &inbound.Reply{Code: 550, Enhanced: [3]int{5, 1, 1},
		Message: "<" + rcpt + ">: no such mailbox here (no inbound route takes this address)"}
}

// noneRouted refuses a message none of whose recipients a route takes any
// more (routes or verification went away between RCPT and DATA): the
// unrouted 550 5.1.1, as RCPT would now answer.
func noneRouted(rcpts []string) error {
	if len(rcpts) == 1 {
		return unrouted(rcpts[0])
	}
	return &inbound.Reply{Code: 550, Enhanced: [3]int{5, 1, 1},
		Message: "no such mailbox here for any recipient (no inbound route takes these addresses)"}
}

// routeFor finds the route mail for rcpt takes: the route of its local
// part, else of the local part before a "+" (support+tag@ goes where
// support@ goes), else the domain's "*" route. The address is read, and
// recorded, in its normal form (inboundKey): names are stored in A-labels,
// SMTPUTF8 mail may give them in Unicode. errNotInbound when its domain is
// no verified inbound domain (or no valid IDN, which Accept refused);
// unrouted when no route takes it, or the route's webhook is gone.
func routeFor(tx *storage.Tx, rcpt string) (routed, error) {
	addr, err := inboundKey(rcpt)
	if err != nil {
		return routed{}, errNotInbound
	}
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 || at == len(addr)-1 {
		return routed{}, errNotInbound
	}
	local, domain := addr[:at], strings.TrimSuffix(addr[at+1:], ".")
	d, err := tx.VerifiedInboundDomain(domain)
	if errors.Is(err, storage.ErrNotFound) {
		return routed{}, errNotInbound
	} else if err != nil {
		return routed{}, err
	}
	patterns := []string{local}
	if base, _, ok := strings.Cut(local, "+"); ok && base != "" {
		patterns = append(patterns, base)
	}
	for _, pat := range append(patterns, "*") {
		r, err := tx.InboundRouteFor(d, pat)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		} else if err != nil {
			return routed{}, err
		}
		w, err := tx.Webhook(d.AccountID, r.WebhookID)
		if errors.Is(err, storage.ErrNotFound) {
			return routed{}, unrouted(rcpt)
		} else if err != nil {
			return routed{}, err
		}
		return routed{rcpt: addr, domain: d, route: r, webhook: w}, nil
	}
	return routed{}, unrouted(rcpt)
}

// inboundDay is the day a received message counts in for the quota.
func inboundDay(t time.Time) uint32 { return uint32(t.UTC().Unix() / 86400) }

// overQuota is the refusal of mail over an account's daily inbound quota
// (452: a temporary condition; the sender retries, tomorrow it passes).
func overQuota(quota int) error {
	return &inbound.Reply{Code: 452, Enhanced: [3]int{4, 2, 2},
		Message: fmt.Sprintf("the recipient's account has received its %d messages for today; try again later", quota)}
}

// overByteQuota is the refusal of mail past an account's daily inbound
// bytes (InboundByteQuota).
func overByteQuota(quota int64) error {
	return &inbound.Reply{Code: 452, Enhanced: [3]int{4, 2, 2},
		Message: fmt.Sprintf("the recipient's account has received its %d MiB for today; try again later", quota>>20)}
}

// InboundBytesPerMessage is what the daily byte quota allows per message of
// the daily message quota: an average of 1 MiB.
const InboundBytesPerMessage = 1 << 20

// InboundByteQuota bounds the raw bytes an account stores per UTC day
// (counted once per message, however many of its recipients are routed):
// its daily message quota times InboundBytesPerMessage.
func InboundByteQuota(a storage.Account) int64 {
	return int64(InboundQuota(a)) * InboundBytesPerMessage
}

// checkQuota refuses mail for acct when its usage today plus add would pass
// either daily quota (messages, bytes). At RCPT add is zero: the refusal
// comes once a quota is reached.
func checkQuota(acct storage.Account, used, add storage.InboundUsage) error {
	if quota := InboundQuota(acct); used.Messages+add.Messages >= quota+min(add.Messages, 1) {
		return overQuota(quota)
	}
	if quota := InboundByteQuota(acct); used.Bytes+add.Bytes >= quota+min(add.Bytes, 1) {
		return overByteQuota(quota)
	}
	return nil
}

// acceptInbound decides RCPT for an address that is not one of the
// listener's own: routed addresses of verified inbound domains, while the
// account is under its daily quota.
func (in Inbound) acceptInbound(rcpt string) error {
	a := in.a
	err := a.db.View(func(tx *storage.Tx) error {
		r, err := routeFor(tx, rcpt)
		if err != nil {
			return err
		}
		acct, err := tx.Account(r.domain.AccountID)
		if err != nil {
			return err
		}
		return checkQuota(acct, tx.InboundReceived(acct.ID, inboundDay(a.Now())), storage.InboundUsage{})
	})
	var reply *inbound.Reply
	if err != nil && !errors.Is(err, errNotInbound) && !errors.As(err, &reply) {
		return fmt.Errorf("%w: %w", inbound.ErrRetryLater, err)
	}
	return err
}

// receive stores a message for its routed recipients: the raw message once
// per account, and per recipient a record and an email.received event for
// the route's webhook, in one transaction that commits before the listener
// answers 250. A recipient whose route went away since RCPT is skipped;
// when that leaves none, the message is refused with the unrouted 550
// (nothing stored must not be acknowledged). An account over its quota
// refuses the whole message with 452; a storage failure is 451.
func (in Inbound) receive(env inbound.Envelope, rcpts []string, data []byte) error {
	a := in.a
	parsed := inbound.ParseReceived(data, MaxInboundAttachment)
	spam := a.spamVerdict(env, parsed, data)
	now := a.Now()
	var stored []storage.InboundMessage
	expires := now.Add(a.opts.EventRetention)
	err := a.db.Update(func(tx *storage.Tx) error {
		stored = stored[:0]
		adds, accts, raws := map[string]storage.InboundUsage{}, map[string]storage.Account{}, map[string]string{}
		for _, rcpt := range rcpts {
			r, err := routeFor(tx, rcpt)
			var reply *inbound.Reply
			if errors.Is(err, errNotInbound) || errors.As(err, &reply) {
				a.log.Info("inbound mail not delivered: its route went away", "rcpt", rcpt, "err", err)
				continue
			} else if err != nil {
				return err
			}
			acctID := r.domain.AccountID
			acct, seen := accts[acctID]
			if !seen {
				if acct, err = tx.Account(acctID); err != nil {
					return err
				}
				accts[acctID] = acct
			}
			// Every copy counts, and the raw bytes once: a message that
			// would take the account past its quota is refused whole.
			add := adds[acctID]
			rawID, ok := raws[acctID]
			add.Messages++
			if !ok {
				add.Bytes += int64(len(data))
			}
			if err := checkQuota(acct, tx.InboundReceived(acctID, inboundDay(now)), add); err != nil {
				return err
			}
			adds[acctID] = add
			// The raw bytes once per account: every copy points at them,
			// and all expire together.
			if !ok {
				rawID = NewID()
				raws[acctID] = rawID
				if err := tx.InsertInboundRaw(acctID, rawID, data, expires); err != nil {
					return err
				}
			}
			m := storage.InboundMessage{ID: NewID(), AccountID: acctID, RawID: rawID, Test: r.webhook.Test,
				DomainID: r.domain.ID, RouteID: r.route.ID, MailFrom: env.From, Recipient: r.rcpt, Size: len(data),
				ReceivedAt: now, ExpiresAt: expires}
			ev, err := a.receivedEvent(r, m, env, parsed, spam)
			if err != nil {
				return err
			}
			m.EventID = ev.ID
			if err := tx.InsertInboundMessage(m); err != nil {
				return err
			}
			if err := tx.AppendEvent(ev); err != nil {
				return err
			}
			stored = append(stored, m)
		}
		if len(stored) == 0 {
			return noneRouted(rcpts)
		}
		for acctID, add := range adds {
			if err := tx.AddInboundReceived(acctID, inboundDay(now), add); err != nil {
				return err
			}
		}
		return nil
	})
	var reply *inbound.Reply
	switch {
	case errors.As(err, &reply):
		a.log.Info("inbound mail refused", "reply", reply.Error())
		return err
	case err != nil:
		return fmt.Errorf("%w: %w", inbound.ErrRetryLater, err)
	}
	for _, m := range stored {
		a.log.Info("inbound mail received", "account", m.AccountID, "inbound_message_id", m.ID, "route", m.RouteID,
			"bytes", m.Size, "spam", spam.Verdict)
	}
	return nil
}

// Spam verdicts of a received message (docs/inbound.md).
const (
	VerdictNotSpam = "not_spam"
	VerdictSuspect = "suspect"
	VerdictSpam    = "spam"
)

// spamData is the spam part of an email.received event: the verdict, the
// grader's spam-likelihood score of the content, and the SPF, DKIM and
// DMARC results of the grader's evaluators.
type spamData struct {
	Verdict string     `json:"verdict"`
	Score   int        `json:"score"`
	Max     int        `json:"max"`
	SPF     spfData    `json:"spf"`
	DKIM    []dkimData `json:"dkim"`
	DMARC   dmarcData  `json:"dmarc"`
	Reasons []string   `json:"reasons"`
}

type spfData struct {
	Result string `json:"result"`
	Domain string `json:"domain"`
}

type dkimData struct {
	Result   string `json:"result"`
	Domain   string `json:"domain"`
	Selector string `json:"selector"`
}

type dmarcData struct {
	Result      string `json:"result"`
	Policy      string `json:"policy"`
	SPFAligned  bool   `json:"spfAligned"`
	DKIMAligned bool   `json:"dkimAligned"`
}

// graderResolverConfig is the grader's configuration with a resolver: the
// grader's own, else the one domain checks use.
func (a *App) graderResolverConfig() grader.Config {
	cfg := a.opts.Grader.Config
	if cfg.Resolver == nil {
		if r, ok := a.opts.Domains.Resolver.(grader.Resolver); ok {
			cfg.Resolver = r
		}
	}
	return cfg
}

// spamVerdict judges a received message: SPF, DKIM and DMARC through the
// grader's evaluators (the same as for a submission with sender_ip and
// helo_hostname), and the grader's spam-likelihood rules on its content.
//
//	spam:    DMARC fails under p=quarantine or p=reject, or the content scores under half its maximum
//	suspect: DMARC fails under p=none, SPF fails, every DKIM signature fails, or the content scores under 80%
//	not_spam: anything else
func (a *App) spamVerdict(env inbound.Envelope, parsed *inbound.Received, raw []byte) spamData {
	fromDomain := ""
	if addr, err := mail.ParseAddress(parsed.From); err == nil {
		fromDomain = addr.Address[strings.LastIndexByte(addr.Address, '@')+1:]
	}
	auth := grader.Authenticate(context.Background(), a.graderResolverConfig(), env.RemoteIP, env.HELO, env.From, fromDomain, raw)
	// The content rules judge the bodies the event shows, as
	// ParseReceived read them: the parts are walked once.
	in := content.Input{Raw: raw, Text: parsed.Text, HTML: parsed.HTML, Parsed: true, Charsets: parsed.Charsets}
	if parsed.Problem != "" {
		in.Broken = []string{parsed.Problem}
	}
	cr := content.Evaluate(in)
	s := spamData{Score: cr.Spam.Score, Max: cr.Spam.Max, SPF: spfData{auth.SPF.Result, auth.SPF.Domain},
		DKIM: []dkimData{}, DMARC: dmarcData{auth.DMARC.Result, auth.DMARC.Policy, auth.DMARC.SPFAligned, auth.DMARC.DKIMAligned},
		Reasons: []string{}}
	dkimFails := len(auth.DKIM) > 0
	for _, d := range auth.DKIM {
		s.DKIM = append(s.DKIM, dkimData{d.Result, d.Domain, d.Selector})
		if d.Result == "pass" {
			dkimFails = false
		}
	}
	spam, suspect := false, false
	dmarcFail := auth.DMARC.Result == "fail"
	enforced := auth.DMARC.Policy == "quarantine" || auth.DMARC.Policy == "reject"
	if dmarcFail && enforced {
		spam = true
		s.Reasons = append(s.Reasons, "DMARC fails and the From domain's policy is p="+auth.DMARC.Policy)
	} else if dmarcFail {
		suspect = true
		s.Reasons = append(s.Reasons, "DMARC fails (the From domain's policy is p=none)")
	}
	if auth.SPF.Result == "fail" {
		suspect = true
		s.Reasons = append(s.Reasons, "SPF fails for "+auth.SPF.Domain)
	}
	if dkimFails {
		suspect = true
		s.Reasons = append(s.Reasons, "no DKIM signature verifies")
	}
	if s.Max > 0 && s.Score*2 < s.Max {
		spam = true
		s.Reasons = append(s.Reasons, fmt.Sprintf("the content scores %d of %d on the grader's spam rules", s.Score, s.Max))
	} else if s.Max > 0 && s.Score*5 < s.Max*4 {
		suspect = true
		s.Reasons = append(s.Reasons, fmt.Sprintf("the content scores %d of %d on the grader's spam rules", s.Score, s.Max))
	}
	switch {
	case spam:
		s.Verdict = VerdictSpam
	case suspect:
		s.Verdict = VerdictSuspect
	default:
		s.Verdict = VerdictNotSpam
	}
	return s
}

// receivedData is the email.received payload (docs/inbound.md).
type receivedData struct {
	InboundMessageID string           `json:"inboundMessageId"`
	DomainID         string           `json:"domainId"`
	RouteID          string           `json:"routeId"`
	Envelope         receivedEnvelope `json:"envelope"`
	From             string           `json:"from"`
	To               []string         `json:"to"`
	Cc               []string         `json:"cc"`
	ReplyTo          []string         `json:"replyTo"`
	Subject          string           `json:"subject"`
	MessageIDHeader  string           `json:"messageIdHeader"`
	Date             string           `json:"date"`
	Headers          []headerData     `json:"headers"`
	Text             string           `json:"text"`
	HTML             string           `json:"html"`
	Attachments      []attachmentData `json:"attachments"`
	Spam             spamData         `json:"spam"`
	RawURL           string           `json:"rawUrl"`
	RawSize          int              `json:"rawSize"`
	ReceivedAt       string           `json:"receivedAt"`
	ParseProblem     string           `json:"parseProblem,omitempty"`
}

type receivedEnvelope struct {
	MailFrom string `json:"mailFrom"`
	Rcpt     string `json:"rcptTo"`
	RemoteIP string `json:"remoteIp"`
	HELO     string `json:"helo"`
}

type headerData struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// attachmentData is one attachment: its content in base64, or, over
// MaxInboundAttachment, none (omitted true) and the raw message's link.
type attachmentData struct {
	Filename    string  `json:"filename"`
	ContentType string  `json:"contentType"`
	ContentID   string  `json:"contentId"`
	Disposition string  `json:"disposition"`
	Size        int     `json:"size"`
	Content     *[]byte `json:"content"`
	Omitted     bool    `json:"omitted"`
	RawURL      string  `json:"rawUrl,omitempty"` // where an omitted attachment is: the raw message
}

func orEmpty(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// receivedEvent builds the email.received event of message m for route r's
// webhook, in the webhook's mode.
func (a *App) receivedEvent(r routed, m storage.InboundMessage, env inbound.Envelope, p *inbound.Received, spam spamData) (storage.Event, error) {
	d := receivedData{InboundMessageID: m.ID, DomainID: r.domain.ID, RouteID: r.route.ID,
		Envelope: receivedEnvelope{MailFrom: env.From, Rcpt: r.rcpt, HELO: env.HELO},
		From:     p.From, To: orEmpty(p.To), Cc: orEmpty(p.Cc), ReplyTo: orEmpty(p.ReplyTo), Subject: p.Subject,
		MessageIDHeader: p.MessageID, Date: p.Date, Headers: []headerData{}, Text: p.Text, HTML: p.HTML,
		Attachments: []attachmentData{}, Spam: spam, RawURL: a.publicURL(InboundRawPath(m.ID)), RawSize: m.Size,
		ReceivedAt: m.ReceivedAt.UTC().Format(time.RFC3339Nano), ParseProblem: p.Problem}
	if env.RemoteIP != nil {
		d.Envelope.RemoteIP = env.RemoteIP.String()
	}
	for _, h := range p.Headers {
		d.Headers = append(d.Headers, headerData{h.Name, h.Value})
	}
	for _, at := range p.Attachments {
		ad := attachmentData{Filename: at.Filename, ContentType: at.ContentType, ContentID: at.ContentID,
			Disposition: at.Disposition, Size: at.Size, Omitted: at.Content == nil}
		if ad.Omitted {
			ad.RawURL = d.RawURL
		}
		if at.Content != nil {
			c := at.Content
			ad.Content = &c
		}
		d.Attachments = append(d.Attachments, ad)
	}
	ev, err := queue.NewEvent(m.AccountID, r.webhook.Test, EventReceived, m.ReceivedAt, d, a.opts.EventRetention)
	if err != nil {
		return ev, err
	}
	ev.WebhookID, ev.Recipient = r.webhook.ID, r.rcpt
	return ev, nil
}
