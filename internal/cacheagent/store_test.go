package cacheagent

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// nginx stores an admitted response only after the whole of it has passed,
// and the folder watch sees it later still: admissions in the meantime count
// its bytes as reserved, so that quick ones cannot outgrow the memory
// together.
func TestAdmissionsReserveMemoryUntilTheEntryIsStored(t *testing.T) {
	const body = 100 << 10 // an entry of 26 pages: 106,496 bytes
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		run  func(s *store) bool // the last admission's answer
		want bool
	}{
		{"a response fits an empty cache", func(s *store) bool {
			return s.reserve("a", body, 1<<20, start)
		}, true},
		{"nine admitted responses not yet stored leave no room for a tenth in 1 MiB", func(s *store) bool {
			for i := range 9 {
				if !s.reserve(string(rune('a'+i)), body, 1<<20, start) {
					t.Fatalf("admission %d refused", i)
				}
			}
			return s.reserve("j", body, 1<<20, start)
		}, false},
		{"a stored entry counts once, not again as reserved", func(s *store) bool {
			for i := range 9 {
				s.reserve(string(rune('a'+i)), body, 1<<20, start)
			}
			s.store(t, "a", body)
			// 9 entries' bytes are in use or reserved: still no room.
			return s.reserve("j", body, 1<<20, start)
		}, false},
		{"an evicted entry makes room once it is stored and gone", func(s *store) bool {
			for i := range 9 {
				s.reserve(string(rune('a'+i)), body, 1<<20, start)
			}
			s.store(t, "a", body)
			s.removed("a")
			return s.reserve("j", body, 1<<20, start)
		}, true},
		{"a reservation nginx never stores stops counting after its time", func(s *store) bool {
			for i := range 9 {
				s.reserve(string(rune('a'+i)), body, 1<<20, start)
			}
			return s.reserve("j", body, 1<<20, start.Add(reservationTTL+time.Second))
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &store{dir: t.TempDir(), entries: map[string]int64{}}
			if got := tt.run(s); got != tt.want {
				t.Errorf("admitted %v, want %v", got, tt.want)
			}
		})
	}
}

// store writes an entry's file of size bytes and lets the store see it, as
// the folder watch does.
func (s *store) store(t *testing.T, name string, size int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.dir, name), make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	s.added(name)
}

// The entry's name is what the reservation waits for: nginx names a key's
// file by the key's MD5 in hex (md5sum of the same string).
func TestAnEntrysFileIsTheMD5OfItsKey(t *testing.T) {
	if got, want := entryName("web example.com/logo.svg"), "ae5be5760d1c1967ee99b43e2dafa72e"; got != want {
		t.Errorf("entryName = %q, want %q", got, want)
	}
}
