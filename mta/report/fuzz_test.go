package report

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// seedReports adds every DSN and ARF fixture to the corpus: each parser is
// also fed the other's reports.
func seedReports(f *testing.F) {
	for _, kind := range []string{"dsn", "arf"} {
		for _, name := range fixtureNames(f, kind) {
			f.Add(fixture(f, kind, name))
		}
	}
}

func FuzzParseDSN(f *testing.F) {
	seedReports(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		d, err := ParseDSN(bytes.NewReader(msg))
		if err != nil {
			if d != nil || !errors.Is(err, ErrNotDSN) {
				t.Fatalf("got %+v with error %v; want nil and ErrNotDSN", d, err)
			}
			return
		}
		checkDSN(t, d)
		again, err := ParseDSN(bytes.NewReader(msg))
		if err != nil || !reflect.DeepEqual(d, again) {
			t.Fatalf("a second parse differs: %+v, %v", again, err)
		}
	})
}

func FuzzParseARF(f *testing.F) {
	seedReports(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		fb, err := ParseARF(bytes.NewReader(msg))
		if err != nil {
			if fb != nil || !errors.Is(err, ErrNotARF) {
				t.Fatalf("got %+v with error %v; want nil and ErrNotARF", fb, err)
			}
			return
		}
		checkARF(t, fb)
		again, err := ParseARF(bytes.NewReader(msg))
		if err != nil || !reflect.DeepEqual(fb, again) {
			t.Fatalf("a second parse differs: %+v, %v", again, err)
		}
	})
}
