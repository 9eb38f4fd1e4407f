package app

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"mailbolt/mta/message"
	"mailbolt/mta/queue"
	"mailbolt/storage"
)

// Tracking and unsubscribe links live under /v1/ on the public URL.
const (
	OpenPath        = "/v1/t/o/"
	ClickPath       = "/v1/t/c/"
	UnsubscribePath = "/v1/u/"
)

// publicURL is an absolute link on the server's public base URL.
func (a *App) publicURL(path string) string {
	return strings.TrimSuffix(a.opts.PublicURL, "/") + path
}

// maxTrackedLinks is how many links of one message can be tracked: the
// link index is 16 bits in the token.
const maxTrackedLinks = 1 << 16

// track rewrites a message's HTML for open and click tracking: links go
// through signed redirect URLs (their targets are returned, by index, to be
// stored), and a signed 1×1 image is added for opens.
func (a *App) track(m storage.Message, html string) (string, []string) {
	return a.trackFrom(m, html, 0, true)
}

// trackFrom is track for one of several HTML parts of a message (a
// submitted message may have more than one): its links are numbered from
// first, and the pixel goes in only with pixel set (the first part).
func (a *App) trackFrom(m storage.Message, html string, first int, pixel bool) (string, []string) {
	if html == "" {
		return html, nil
	}
	var links []string
	if m.Tracking.Clicks {
		var rewritten []message.Link
		html, rewritten = message.RewriteLinks(html, func(_ string, i int) (string, bool) {
			if first+i >= maxTrackedLinks {
				return "", false
			}
			return a.publicURL(ClickPath + a.signToken(linkToken{tokenClick, m.AccountID, m.ID, first + i})), true
		})
		links = make([]string, len(rewritten))
		for _, l := range rewritten {
			links[l.Index] = l.URL
		}
	}
	if m.Tracking.Opens && pixel {
		html = message.InsertPixel(html, a.publicURL(OpenPath+a.signToken(linkToken{tokenOpen, m.AccountID, m.ID, 0})))
	}
	return html, links
}

// unsubscribeHeaders are the List-Unsubscribe fields (RFC 2369, RFC 8058)
// for recipient i of m: a one-click HTTPS link and a mailto address on the
// domain's bounce subdomain, both naming the recipient with a signed token.
func (a *App) unsubscribeHeaders(m storage.Message, i int) []byte {
	tok := a.signToken(linkToken{tokenUnsubscribe, m.AccountID, m.ID, i})
	return []byte("List-Unsubscribe: <" + a.publicURL(UnsubscribePath+tok) + ">,\r\n <mailto:u+" + tok + "@" +
		ReturnPathLabel + "." + m.Domain + ">\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n")
}

// openedData is the message.opened payload (spec §6).
type openedData struct {
	MessageID   string        `json:"messageId"`
	To          string        `json:"to"`
	OpenedAt    string        `json:"openedAt"`
	IsFirstOpen bool          `json:"isFirstOpen"`
	OpenCount   int           `json:"openCount"`
	Context     ClientContext `json:"context"`
}

// clickedData is the message.clicked payload (spec §6).
type clickedData struct {
	MessageID    string        `json:"messageId"`
	To           string        `json:"to"`
	ClickedAt    string        `json:"clickedAt"`
	URL          string        `json:"url"`
	LinkID       string        `json:"linkId"`
	IsFirstClick bool          `json:"isFirstClick"`
	ClickCount   int           `json:"clickCount"`
	Context      ClientContext `json:"context"`
}

// unsubscribedData is the recipient.unsubscribed payload (spec §6).
type unsubscribedData struct {
	Email          string   `json:"email"`
	UnsubscribedAt string   `json:"unsubscribedAt"`
	Reason         string   `json:"reason"`
	Method         string   `json:"method"`
	ListIDs        []string `json:"listIds"`
}

// Unsubscribe methods.
const (
	MethodOneClick = "one-click"
	MethodLink     = "link"
	MethodMailto   = "mailto"
)

// LinkID is the stable id of a tracked link: the same URL has the same id
// in every message.
func LinkID(url string) string {
	h := sha256.Sum256([]byte(url))
	return hex.EncodeToString(h[:6])
}

// message reads the message a token names, in tx.
func tokenMessage(tx *storage.Tx, t linkToken) (storage.Message, bool) {
	m, err := tx.Message(t.accountID, t.messageID)
	return m, err == nil
}

// RecordOpen records an open of the message an open token names. A token
// that does not verify, or names no message, records nothing: the caller
// answers with the image either way.
func (a *App) RecordOpen(token string, client ClientContext) bool {
	t, ok := a.verifyToken(tokenOpen, token)
	if !ok {
		return false
	}
	now := a.Now()
	recorded := false
	err := a.db.Update(func(tx *storage.Tx) error {
		recorded = false
		m, ok := tokenMessage(tx, t)
		if !ok {
			return nil
		}
		e, err := tx.Engagement(m.AccountID, m.ID)
		if err != nil {
			return err
		}
		e.Opens++
		first := e.FirstOpenAt == nil
		if first {
			e.FirstOpenAt = &now
		}
		if err := tx.PutEngagement(m.ID, e); err != nil {
			return err
		}
		stats := []storage.Stat{storage.StatOpened}
		if first {
			stats = append(stats, storage.StatUniqueOpened)
		}
		recorded = true
		to := queue.ToAddrs(m)
		return a.appendMessageEvent(tx, m, EventOpened, strings.Join(to, ","), now, openedData{
			MessageID: m.ID, To: strings.Join(to, ", "), OpenedAt: now.Format(time.RFC3339Nano), IsFirstOpen: first,
			OpenCount: e.Opens, Context: client}, stats...)
	})
	if err != nil {
		a.log.Error("recording an open failed", "err", err)
		return false
	}
	return recorded
}

// RecordClick records a click on a tracked link and returns the URL that
// was recorded for it when the message was accepted: the redirect never
// goes anywhere else. A token that does not verify or a link that is not
// recorded is NOT_FOUND, and nothing is recorded then.
func (a *App) RecordClick(token string, client ClientContext) (url string, err error) {
	t, ok := a.verifyToken(tokenClick, token)
	if !ok {
		return "", NotFound("link")
	}
	now := a.Now()
	err = a.db.Update(func(tx *storage.Tx) error {
		url = ""
		m, ok := tokenMessage(tx, t)
		if !ok {
			return nil
		}
		target, err := tx.Link(m.AccountID, m.ID, t.index)
		if err != nil {
			return nil
		}
		e, err := tx.Engagement(m.AccountID, m.ID)
		if err != nil {
			return err
		}
		e.Clicks++
		for len(e.LinkClicks) <= t.index {
			e.LinkClicks = append(e.LinkClicks, 0)
		}
		e.LinkClicks[t.index]++
		first := e.FirstClickAt == nil
		if first {
			e.FirstClickAt = &now
		}
		if err := tx.PutEngagement(m.ID, e); err != nil {
			return err
		}
		stats := []storage.Stat{storage.StatClicked}
		if first {
			stats = append(stats, storage.StatUniqueClicked)
		}
		url = target
		to := queue.ToAddrs(m)
		return a.appendMessageEvent(tx, m, EventClicked, strings.Join(to, ","), now, clickedData{
			MessageID: m.ID, To: strings.Join(to, ", "), ClickedAt: now.Format(time.RFC3339Nano), URL: target, LinkID: LinkID(target),
			IsFirstClick: first, ClickCount: e.Clicks, Context: client}, stats...)
	})
	if err != nil {
		return "", Internal(fmt.Errorf("recording a click: %w", err))
	}
	if url == "" {
		return "", NotFound("link")
	}
	return url, nil
}

// UnsubscribeTarget is the address an unsubscribe token names, for the
// confirmation page; ok is false when the token does not verify.
func (a *App) UnsubscribeTarget(token string) (email string, err error) {
	t, ok := a.verifyToken(tokenUnsubscribe, token)
	if !ok {
		return "", NotFound("unsubscribe link")
	}
	err = a.db.View(func(tx *storage.Tx) error {
		if m, found := tokenMessage(tx, t); found && t.index < len(m.Recipients) {
			email = m.Recipients[t.index].Email
		}
		return nil
	})
	if err != nil {
		return "", Internal(err)
	}
	if email == "" {
		return "", NotFound("unsubscribe link")
	}
	return email, nil
}

// Unsubscribe suppresses the recipient an unsubscribe token names for the
// broadcast stream (reason unsubscribe; transactional mail still flows) and emits recipient.unsubscribed, once: a repeat changes
// nothing and reports ok.
func (a *App) Unsubscribe(token, method string) (email string, err error) {
	t, ok := a.verifyToken(tokenUnsubscribe, token)
	if !ok {
		return "", NotFound("unsubscribe link")
	}
	return a.unsubscribe(t, method)
}

func (a *App) unsubscribe(t linkToken, method string) (email string, err error) {
	now := a.Now()
	err = a.db.Update(func(tx *storage.Tx) error {
		email = ""
		m, found := tokenMessage(tx, t)
		if !found || t.index >= len(m.Recipients) {
			return nil
		}
		r := &m.Recipients[t.index]
		email = r.Email
		if r.UnsubscribedAt != nil {
			return nil // already done: one event per recipient and message
		}
		r.UnsubscribedAt = &now
		if err := tx.UpdateMessage(m); err != nil {
			return err
		}
		if _, _, err := tx.PutSuppression(storage.Suppression{AccountID: m.AccountID, Recipient: r.Email,
			Stream: storage.StreamBroadcast, Reason: "unsubscribe", SourceMessageID: m.ID, CreatedAt: now}); err != nil {
			return err
		}
		lists := []string{}
		if m.CampaignID != "" {
			lists = append(lists, m.CampaignID)
		}
		return a.appendMessageEvent(tx, m, EventUnsubscribed, r.Email, now, unsubscribedData{Email: r.Email,
			UnsubscribedAt: now.Format(time.RFC3339Nano), Reason: "unsubscribe", Method: method, ListIDs: lists},
			storage.StatUnsubscribed)
	})
	if err != nil {
		return "", Internal(fmt.Errorf("recording an unsubscribe: %w", err))
	}
	if email == "" {
		return "", NotFound("unsubscribe link")
	}
	return email, nil
}

// LinkTarget is the URL recorded for a tracked link, without recording a
// click (for requests over the rate limit).
func (a *App) LinkTarget(token string) (string, error) {
	t, ok := a.verifyToken(tokenClick, token)
	if !ok {
		return "", NotFound("link")
	}
	var url string
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		url, err = tx.Link(t.accountID, t.messageID, t.index)
		return err
	})
	return url, storageErr(err, "link")
}

// GeoDB is the location database opens and clicks are looked up in; nil
// when none is configured.
func (a *App) GeoDB() *GeoDB { return a.opts.GeoDB }
