// Package content scores the content quality and the spam likelihood of one
// email from observable signals only, in the manner of SpamAssassin: a table
// of rules (Rules), each a named check with a weight, a severity and a
// concrete fix. There is no opaque model; every point lost is explained by a
// Finding that names its rule.
//
// Scoring rules, first because every caller depends on them:
//
//   - Each rule belongs to one dimension: "content" (content_quality) or
//     "spam" (spam_likelihood). A dimension's Max is the sum of the weights
//     of its rules; a message that triggers nothing scores Max in both.
//     Every rule that fires subtracts its whole weight, once, however many
//     times its signal occurs. Higher is better in both dimensions (for
//     spam_likelihood, higher means less spammy). Rules of weight 0 are
//     notes: they give a Finding but cost nothing.
//   - The rules that read header fields (Date, Message-ID) need a header to
//     read: they run when the Input has Raw or a non-nil Headers map.
//     Otherwise (a submission of bare fields, to which mailbolt itself adds
//     Date and Message-ID when it sends) they are skipped, cost nothing, and
//     leave an info Finding that says they were not checked.
//   - Input fields win over Raw: Raw fills only the fields left empty, and
//     Headers keys win over the same keys in Raw's header.
//   - A Raw message that cannot be parsed, in whole or in part, is never an
//     error: what could be read is scored and the MIME_BROKEN rule fires.
//     A legacy charset (ISO-8859-1, Windows-1252 are decoded here; others
//     are read with invalid bytes replaced) gives the CHARSET_NOT_UTF8 note.
//
// Data lists the rules consult (URL shorteners, spam phrases, top-level
// domains recognised in display names) are package variables next to the
// table, so that they can be reviewed and tested as data.
//
// Evaluate does no I/O and is safe for concurrent use.
package content
