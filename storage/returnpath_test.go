package storage

import (
	"testing"
	"time"
)

// The upgrade time of bounce addresses is absent until recorded, then
// read back to the nanosecond in UTC.
func TestReturnPathMACSince(t *testing.T) {
	db, err := Open(t.TempDir(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var got time.Time
	db.View(func(tx *Tx) error { got = tx.ReturnPathMACSince(); return nil })
	if !got.IsZero() {
		t.Fatalf("fresh database: %v", got)
	}
	at := time.Date(2026, 11, 22, 12, 0, 0, 123, time.FixedZone("x", 3600))
	if err := db.Update(func(tx *Tx) error { return tx.SetReturnPathMACSince(at) }); err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error { got = tx.ReturnPathMACSince(); return nil })
	if !got.Equal(at) || got.Location() != time.UTC {
		t.Fatalf("read %v, want %v in UTC", got, at)
	}
}
