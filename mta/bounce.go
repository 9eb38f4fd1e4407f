package mta

import (
	"regexp"
	"strconv"
	"strings"
)

// Bounce classification turns an SMTP reply (or a failure Mailbolt
// describes as one) into what it means for the recipient address. The
// tables below are the whole rule set; docs/bounces.md prints them.
//
//  1. The class comes from the basic reply code (2, 4 or 5); with no code
//     (no server answered) from the enhanced status code's class.
//  2. The category comes from the enhanced status code (RFC 3463 and the
//     IANA registry of RFC 5248), looked up by subject.detail in codeRules,
//     then by subject in subjectRules. Some rules let the reply text refine
//     the category; a code whose detail is 0 ("other or undefined") and a
//     reply without an enhanced code are read by the text patterns first.
//  3. Without an enhanced code and without a matching text pattern, the
//     basic code decides (basicRules).
//  4. The type follows from class and category (typeOf): a 4xx is always
//     soft; a 5xx is hard for the categories that say the address cannot
//     work, block for those that say the receiver refused the sender, soft
//     otherwise.

// BounceType says what a failed delivery means for the recipient address.
type BounceType string

// Bounce types.
const (
	// BounceHard: the address does not work; it is suppressed.
	BounceHard BounceType = "hard"
	// BounceSoft: the address may work later (full mailbox, temporary
	// failure, a problem of the receiving system).
	BounceSoft BounceType = "soft"
	// BounceBlock: the receiver refused this sender, IP or content; the
	// address itself is fine and is not suppressed.
	BounceBlock BounceType = "block"
)

// BounceCategory is the reason for a bounce, finer than its type.
type BounceCategory string

// Bounce categories.
const (
	CategoryUnknownUser     BounceCategory = "unknown_user"      // the mailbox does not exist (X.1.1, X.1.6)
	CategoryBadAddress      BounceCategory = "bad_address"       // the address is malformed or ambiguous (X.1.3, X.1.4)
	CategoryBadDomain       BounceCategory = "bad_domain"        // the domain does not exist or has nowhere to deliver (X.1.2)
	CategoryNullMX          BounceCategory = "null_mx"           // the domain publishes a null MX: it takes no mail (X.1.10, RFC 7505)
	CategoryNoRoute         BounceCategory = "no_route"          // no usable next hop: MX hosts without addresses (X.4.4)
	CategoryMailboxFull     BounceCategory = "mailbox_full"      // over quota (X.2.2)
	CategoryMailboxDisabled BounceCategory = "mailbox_disabled"  // the mailbox exists but takes no mail (X.2.1)
	CategoryMessageTooLarge BounceCategory = "message_too_large" // size limits (X.2.3, X.3.4)
	CategorySenderRejected  BounceCategory = "sender_rejected"   // the envelope sender was refused (X.1.7, X.1.8)
	CategoryContentRejected BounceCategory = "content_rejected"  // media or encoding refused (X.6.x)
	CategoryProtocol        BounceCategory = "protocol"          // a protocol error between the two systems (X.5.x)
	CategoryPolicy          BounceCategory = "policy"            // refused by the receiver's policy (X.7.x)
	CategorySpamBlock       BounceCategory = "spam_block"        // refused as spam, or the sending IP or domain is on a block list
	CategoryRelayDenied     BounceCategory = "relay_denied"      // the server does not relay for this destination
	CategoryAuthFailed      BounceCategory = "auth_failed"       // authentication with a relay failed or is required (X.7.8)
	CategoryNetwork         BounceCategory = "network"           // no connection, or it broke (X.4.1, X.4.2)
	CategoryTimeout         BounceCategory = "timeout"           // a connection or a reply took too long
	CategoryExpired         BounceCategory = "expired"           // delivery time expired (X.4.7)
	CategoryTemporary       BounceCategory = "temporary"         // any other temporary failure
	CategoryOther           BounceCategory = "other"             // any other permanent failure
)

// Bounce is a classified failure. The zero value is "not a bounce" (a 2xx
// reply).
type Bounce struct {
	Type     BounceType     `json:"bounceType"`
	Category BounceCategory `json:"bounceCategory"`
}

// codeRule is what an enhanced status code means: a category, and the text
// patterns (by category) that may replace it when the reply text says more.
type codeRule struct {
	category BounceCategory
	refine   []BounceCategory
}

var (
	// refineAll: the code says nothing specific; any text pattern applies.
	refineAll = []BounceCategory{}
	// refineBlock: a policy refusal stays a block; the text only names it.
	refineBlock = []BounceCategory{CategoryRelayDenied, CategorySpamBlock, CategoryAuthFailed}
	// refineTimeout: a network failure that was a timeout says so.
	refineTimeout = []BounceCategory{CategoryTimeout}
)

// codeRules maps subject.detail of an enhanced status code to its meaning.
// The class digit is not part of the key: it decides the type, not the
// category.
var codeRules = map[string]codeRule{
	"1.1":  {CategoryUnknownUser, nil},             // Bad destination mailbox address
	"1.2":  {CategoryBadDomain, nil},               // Bad destination system address
	"1.3":  {CategoryBadAddress, nil},              // Bad destination mailbox address syntax
	"1.4":  {CategoryBadAddress, nil},              // Destination mailbox address ambiguous
	"1.6":  {CategoryUnknownUser, nil},             // Destination mailbox has moved, no forwarding address
	"1.7":  {CategorySenderRejected, nil},          // Bad sender's mailbox address syntax
	"1.8":  {CategorySenderRejected, nil},          // Bad sender's system address
	"1.10": {CategoryNullMX, nil},                  // Recipient address has null MX (RFC 7505)
	"2.1":  {CategoryMailboxDisabled, nil},         // Mailbox disabled, not accepting messages
	"2.2":  {CategoryMailboxFull, nil},             // Mailbox full
	"2.3":  {CategoryMessageTooLarge, nil},         // Message length exceeds administrative limit
	"3.4":  {CategoryMessageTooLarge, nil},         // Message too big for system
	"4.1":  {CategoryNetwork, refineTimeout},       // No answer from host
	"4.2":  {CategoryNetwork, refineTimeout},       // Bad connection
	"4.3":  {CategoryTemporary, nil},               // Directory server failure (DNS)
	"4.4":  {CategoryNoRoute, nil},                 // Unable to route
	"4.7":  {CategoryExpired, nil},                 // Delivery time expired
	"5.3":  {CategoryProtocol, nil},                // Too many recipients
	"6.0":  {CategoryContentRejected, refineBlock}, // Other or undefined media error ("rejected as spam")
	"7.8":  {CategoryAuthFailed, nil},              // Authentication credentials invalid
	"7.9":  {CategoryAuthFailed, nil},              // Authentication mechanism is too weak
}

// subjectRules is the meaning of a subject whose detail has no rule of
// its own. A detail of 0 ("other or undefined") reads the text first.
var subjectRules = map[int]codeRule{
	0: {CategoryOther, nil},           // Other or undefined status
	1: {CategoryOther, nil},           // Addressing status
	2: {CategoryOther, nil},           // Mailbox status
	3: {CategoryOther, nil},           // Mail system status
	4: {CategoryNetwork, nil},         // Network and routing status
	5: {CategoryProtocol, nil},        // Mail delivery protocol status
	6: {CategoryContentRejected, nil}, // Message content or media status
	7: {CategoryPolicy, refineBlock},  // Security or policy status
}

// basicRules is the meaning of a basic reply code when no enhanced code
// and no text pattern says more. A basic code alone never makes a hard
// bounce: "550 mailbox unavailable" is used for unknown users, policy
// refusals and greylisting alike.
var basicRules = map[int]BounceCategory{
	421: CategoryTemporary, // Service not available, closing transmission channel
	450: CategoryTemporary, // Mailbox unavailable (busy, or blocked for policy reasons)
	451: CategoryTemporary, // Local error in processing
	452: CategoryTemporary, // Insufficient system storage (or too many recipients)
	521: CategoryNoRoute,   // Host does not accept mail (RFC 7504)
	550: CategoryOther,     // Mailbox unavailable
	551: CategoryOther,     // User not local
	552: CategoryMailboxFull,
	553: CategoryOther,   // Mailbox name not allowed (also qmail's relay refusal)
	554: CategoryOther,   // Transaction failed
	556: CategoryNoRoute, // Domain does not accept mail (RFC 7504)
}

// textRule recognises a category in the reply text.
type textRule struct {
	category BounceCategory
	pattern  *regexp.Regexp
}

// textRules are tried in order; the first match wins. Broad patterns
// (policy) come after the specific ones so "Relay access denied" is a
// relay refusal and "blocked using zen.spamhaus.org" a spam block.
var textRules = []textRule{
	{CategoryRelayDenied, regexp.MustCompile(`relay(ing)? (access )?(is )?(denied|not (permitted|allowed|authori[sz]ed)|prohibited)|(not permitted|unable|not allowed) to relay|we do not relay|rcpthosts`)},
	{CategorySpamBlock, regexp.MustCompile(`spam|black ?list|block ?list|\b(dnsbl|rbl)\b|spamhaus|spamcop|barracuda|sorbs|\blisted (at|on|in|by)\b|reputation`)},
	{CategoryAuthFailed, regexp.MustCompile(`authenticat(e|ion) (first|failed|required|credentials)|auth(entication)? required|must authenticate`)},
	{CategoryMailboxFull, regexp.MustCompile(`(mailbox|mail box|inbox|quota|storage|disk) (is )?(full|exceeded)|over ?quota|quota exceeded|exceeded storage`)},
	{CategoryMailboxDisabled, regexp.MustCompile(`(mailbox|account) (is |has been )?(disabled|deactivated|inactive|suspended|locked|frozen)`)},
	{CategoryUnknownUser, regexp.MustCompile(`user unknown|unknown (user|recipient|mailbox)|no such (user|mailbox|recipient|account)|(user|mailbox|recipient|account) (does not|doesn't|did not) exist|(user|mailbox|recipient) not found|invalid (recipient|mailbox)|not a valid (mailbox|recipient|user)|no mailbox here`)},
	{CategoryBadDomain, regexp.MustCompile(`(domain|host) (name )?(not found|does not exist|unknown)|no such domain|unknown domain|unrouteable`)},
	{CategoryMessageTooLarge, regexp.MustCompile(`(message|mail) (size )?(is )?too (big|large)|size exceeds|exceeds? (the )?(maximum |max )?(message )?size|size limit`)},
	{CategorySenderRejected, regexp.MustCompile(`sender (address )?(rejected|denied|domain|verify)|envelope sender|badmailfrom`)},
	{CategoryTimeout, regexp.MustCompile(`timed out|timeout`)},
	{CategoryNetwork, regexp.MustCompile(`connection (refused|reset|closed|lost|dropped)|broken pipe|network is unreachable|no route to host|unexpected eof`)},
	{CategoryTemporary, regexp.MustCompile(`try again later|gr[ae]ylist|temporar`)},
	{CategoryPolicy, regexp.MustCompile(`policy|blocked|denied|prohibited|refused|dmarc|\bspf\b|dkim|reverse dns|\bptr\b|helo`)},
}

// hardCategories and blockCategories make a 5xx hard or block; every other
// category is soft.
var (
	hardCategories = map[BounceCategory]bool{
		CategoryUnknownUser: true, CategoryBadAddress: true, CategoryBadDomain: true,
		CategoryNullMX: true, CategoryMailboxDisabled: true,
	}
	blockCategories = map[BounceCategory]bool{
		CategoryPolicy: true, CategorySpamBlock: true, CategoryRelayDenied: true, CategoryAuthFailed: true,
	}
)

// Classify reads an SMTP reply: the basic code (0 when no server answered),
// the enhanced status code ("5.1.1"; when empty it is looked for at the
// start of text and as qmail's "#5.1.1") and the text. A 2xx is not a
// bounce and gives the zero Bounce.
func Classify(code int, enhanced, text string) Bounce {
	ec, ok := parseEnhanced(enhanced)
	if !ok {
		ec, ok = enhancedInText(text)
	}
	class := code / 100
	if code == 0 && ok {
		class = ec.class
	}
	switch class {
	case 2:
		return Bounce{}
	case 4, 5:
	default:
		class = 4 // a reply outside SMTP's classes is treated as temporary
	}
	lower := strings.ToLower(text)
	var cat BounceCategory
	switch {
	case !ok:
		cat = textCategory(lower, nil)
		if cat == "" {
			cat = basicRules[code]
		}
	default:
		rule, found := codeRules[strconv.Itoa(ec.subject)+"."+strconv.Itoa(ec.detail)]
		if !found {
			rule = subjectRules[ec.subject]
			if ec.detail == 0 && rule.refine == nil {
				rule.refine = refineAll
			}
		}
		cat = rule.category
		if rule.refine != nil {
			if c := textCategory(lower, rule.refine); c != "" {
				cat = c
			}
		}
	}
	if cat == "" || (class == 4 && cat == CategoryOther) {
		cat = CategoryOther
		if class == 4 {
			cat = CategoryTemporary
		}
	}
	return Bounce{Type: typeOf(class, cat), Category: cat}
}

// typeOf: a 4xx is soft whatever its category; a 5xx is hard or block by
// category, soft otherwise.
func typeOf(class int, cat BounceCategory) BounceType {
	switch {
	case class != 5:
		return BounceSoft
	case hardCategories[cat]:
		return BounceHard
	case blockCategories[cat]:
		return BounceBlock
	}
	return BounceSoft
}

// textCategory returns the first text rule that matches, limited to the
// categories in only unless only is empty.
func textCategory(lower string, only []BounceCategory) BounceCategory {
	for _, r := range textRules {
		if len(only) > 0 && !containsCategory(only, r.category) {
			continue
		}
		if r.pattern.MatchString(lower) {
			return r.category
		}
	}
	return ""
}

func containsCategory(list []BounceCategory, c BounceCategory) bool {
	for _, x := range list {
		if x == c {
			return true
		}
	}
	return false
}

// enhancedCode is an RFC 3463 status code class.subject.detail.
type enhancedCode struct{ class, subject, detail int }

func (e enhancedCode) String() string {
	return strconv.Itoa(e.class) + "." + strconv.Itoa(e.subject) + "." + strconv.Itoa(e.detail)
}

// parseEnhanced reads "4.2.2": class 2, 4 or 5, subject and detail of one
// to three digits (RFC 3463 §2).
func parseEnhanced(s string) (enhancedCode, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return enhancedCode{}, false
	}
	var n [3]int
	for i, p := range parts {
		if len(p) == 0 || len(p) > 3 || (i == 0 && len(p) != 1) {
			return enhancedCode{}, false
		}
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return enhancedCode{}, false
		}
		n[i] = v
	}
	if n[0] != 2 && n[0] != 4 && n[0] != 5 {
		return enhancedCode{}, false
	}
	return enhancedCode{n[0], n[1], n[2]}, true
}

var qmailCode = regexp.MustCompile(`#([245]\.\d{1,3}\.\d{1,3})\b`)

// enhancedInText finds an enhanced code at the start of a reply text
// (RFC 2034) or in qmail's "(#5.7.1)" form anywhere in it.
func enhancedInText(text string) (enhancedCode, bool) {
	first, _, _ := strings.Cut(strings.TrimSpace(text), " ")
	if ec, ok := parseEnhanced(first); ok {
		return ec, true
	}
	if m := qmailCode.FindStringSubmatch(text); m != nil {
		return parseEnhanced(m[1])
	}
	return enhancedCode{}, false
}

// splitEnhanced separates a leading enhanced code from a reply text, as
// go-smtp does for error replies but not for the final 250.
func splitEnhanced(text string) (enhanced, rest string) {
	first, after, _ := strings.Cut(text, " ")
	if _, ok := parseEnhanced(first); ok {
		return first, after
	}
	return "", text
}
