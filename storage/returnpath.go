package storage

import "time"

// ReturnPathMACSince is when this installation started writing bounce
// addresses that carry a MAC (the per-recipient VERP return path of
// mta/queue): mail sent before it carries the old per-message form, which
// the inbound listener honours for a while after. Zero until recorded.
func (tx *Tx) ReturnPathMACSince() time.Time {
	v := tx.bucket(bucketMeta).Get(keyReturnPathMACSince)
	if v == nil {
		return time.Time{}
	}
	return time.Unix(0, int64(getU64(v))).UTC()
}

// SetReturnPathMACSince records when bounce addresses started carrying a
// MAC. The App records it once, at its first start on this database.
func (tx *Tx) SetReturnPathMACSince(t time.Time) error {
	return tx.bucket(bucketMeta).Put(keyReturnPathMACSince, putU64(uint64(t.UnixNano())))
}
