package queue

import (
	"strings"

	"mailbolt/mta"
)

// sandboxComplaint marks a simulated delivery that the recipient then
// reports as spam.
const sandboxComplaint mta.BounceCategory = "sandbox-complaint"

// sandboxResults simulates an attempt for a test-mode message: no
// connection is made; the recipient's local part decides the outcome
// (docs/sending.md, "The sandbox").
func sandboxResults(rcpts []string) []mta.RecipientResult {
	out := make([]mta.RecipientResult, len(rcpts))
	for i, rcpt := range rcpts {
		local := strings.ToLower(rcpt[:strings.LastIndexByte(rcpt, '@')])
		res := mta.RecipientResult{Recipient: rcpt, Host: "sandbox"}
		switch local {
		case "bounce":
			res.Status, res.Code, res.Enhanced, res.Text = mta.StatusPermanent, 550, "5.1.1", "sandbox: the mailbox does not exist"
		case "softbounce":
			res.Status, res.Code, res.Enhanced, res.Text = mta.StatusPermanent, 452, "4.2.2", "sandbox: the mailbox is full"
			res.Bounce = mta.Classify(452, "4.2.2", res.Text)
			res.Bounce.Type = mta.BounceSoft
		case "blocked":
			res.Status, res.Code, res.Enhanced, res.Text = mta.StatusPermanent, 554, "5.7.1", "sandbox: message blocked by policy"
		default:
			res.Status, res.Code, res.Enhanced, res.Text = mta.StatusDelivered, 250, "2.0.0", "sandbox: accepted"
			if local == "complaint" {
				res.Bounce.Category = sandboxComplaint
			}
		}
		if res.Bounce.Type == "" && res.Status == mta.StatusPermanent {
			res.Bounce = mta.Classify(res.Code, res.Enhanced, res.Text)
		}
		out[i] = res
	}
	return out
}
