package app

// ReasonNotUTF8 is the reason of a validation error for a value that is
// not UTF-8 text: the API's for a body that holds one (the web package's
// check), and that of every other way in that refuses one (a CSV import,
// a dashboard form, a management command) rather than store U+FFFD in
// place of its bytes.
const ReasonNotUTF8 = "must be valid UTF-8"
