package cacheagent

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// store is nginx's cache folder as the agent sees it: one file per entry,
// named by the MD5 of its key (the cache has no sub-folder levels), with the
// key in the file's header.
type store struct {
	dir string

	// The entries' files and the memory they take, kept by the folder
	// watch: the agent admits no response that would outgrow the memory.
	mu      sync.Mutex
	entries map[string]int64 // file name -> bytes
	used    int64
	// Responses admitted that nginx has not stored yet: the watch sees an
	// entry only once nginx renames it into place, after the whole
	// response, so admissions in the meantime count these bytes too.
	reserved map[string]reservation // file name -> its bytes, until when
	// Counted by watching the folder: entries nginx stored, and entries that
	// left it other than by a purge (nginx's cache manager evicting them:
	// unused for objectTTL, or the least recently used when memory is full).
	stored, deleted atomic.Int64
	// Entries the agent purged, and the purges.
	flushed, flushes atomic.Int64
}

// isEntry tells an entry's file from nginx's temporary files.
func isEntry(name string) bool {
	if len(name) != 32 {
		return false
	}
	for _, c := range name {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// usage is the number of entries and the memory their files take.
func (s *store) usage() (objects, size int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.entries)), s.used
}

// reservation is the memory an admitted response will take once stored.
type reservation struct {
	bytes int64
	until time.Time
}

// reservationTTL bounds how long an admitted response's bytes stay
// reserved without nginx storing it (a transfer cut short, or a key
// nginx stores under another name): the memory is then counted free again.
const reservationTTL = 30 * time.Second

// reserve says whether the entry of a response of size bytes, whose key's
// file is name, fits within limit with what is stored and reserved, and if
// so reserves it until the watch sees it stored.
func (s *store) reserve(name string, size, limit int64, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	pending := int64(0)
	for n, r := range s.reserved {
		if now.After(r.until) {
			delete(s.reserved, n)
			continue
		}
		pending += r.bytes
	}
	need := entryBytes(size)
	if s.used+pending+need > limit {
		return false
	}
	if s.reserved == nil {
		s.reserved = map[string]reservation{}
	}
	s.reserved[name] = reservation{bytes: need, until: now.Add(reservationTTL)}
	return true
}

// entryBytes is the memory an entry of a body of size bytes takes on the
// in-memory volume: nginx's header and the response's headers before the
// body (counted as one page), in whole pages.
func entryBytes(size int64) int64 {
	const page = 4096
	return (size + page + page - 1) / page * page
}

// entryName is the file nginx stores a key's entry in: the MD5 of the key,
// in hex (the cache has no sub-folder levels).
func entryName(key string) string {
	sum := md5.Sum([]byte(key)) //nolint:gosec // nginx's naming, not a security use
	return hex.EncodeToString(sum[:])
}

// rescan rebuilds the entries from the folder (at start, and when the
// kernel dropped folder events).
func (s *store) rescan() error {
	list, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	entries, used := map[string]int64{}, int64(0)
	for _, e := range list {
		if !isEntry(e.Name()) {
			continue
		}
		if n, ok := fileBytes(filepath.Join(s.dir, e.Name())); ok {
			entries[e.Name()] = n
			used += n
		}
	}
	s.mu.Lock()
	s.entries, s.used = entries, used
	s.mu.Unlock()
	return nil
}

// fileBytes is the memory a file takes (its blocks: the folder is an
// in-memory volume); false when it is gone.
func fileBytes(path string) (int64, bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, false
	}
	return st.Blocks * 512, true
}

func (s *store) added(name string) {
	n, ok := fileBytes(filepath.Join(s.dir, name))
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used += n - s.entries[name] // an entry refreshed in place replaces its file
	s.entries[name] = n
	delete(s.reserved, name)
}

func (s *store) removed(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used -= s.entries[name]
	delete(s.entries, name)
}

// purge deletes the entries whose key starts with prefix ("" for all) and
// returns how many.
func (s *store) purge(prefix string) (int64, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, e := range entries {
		if !isEntry(e.Name()) {
			continue
		}
		path := filepath.Join(s.dir, e.Name())
		if prefix != "" {
			key, err := entryKey(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return n, err
			}
			if !strings.HasPrefix(key, prefix) {
				continue
			}
		}
		// Counted before the removal, so the folder watch can tell it from an eviction.
		s.flushed.Add(1)
		if err := os.Remove(path); err != nil {
			s.flushed.Add(-1)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return n, err
		}
		n++
	}
	s.flushes.Add(1)
	return n, nil
}

var keyMarker = []byte("\nKEY: ")

// entryKey reads the key nginx wrote in an entry's header.
func entryKey(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 8192)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	head = head[:n]
	i := bytes.Index(head, keyMarker)
	if i < 0 {
		return "", nil
	}
	rest := head[i+len(keyMarker):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	return string(rest), nil
}

// watch counts entries stored in and removed from the folder until stop is
// closed. nginx writes an entry to a temporary file (a name with a suffix,
// not an entry's) and renames it into place, which the watcher reports as a
// Create; its cache manager unlinks the entries it evicts (a Remove).
func (s *store) watch(stop <-chan struct{}, ready chan<- error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		ready <- err
		return
	}
	defer w.Close()
	if err := w.Add(s.dir); err != nil {
		ready <- err
		return
	}
	// Watching first, then reading the folder: no entry is missed.
	if err := s.rescan(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for {
		select {
		case <-stop:
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			s.count(ev)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				_ = s.rescan() // counts of the lost events are lost; the memory in use is right again
			}
		}
	}
}

// count records one change to the folder.
func (s *store) count(ev fsnotify.Event) {
	name := filepath.Base(ev.Name)
	if !isEntry(name) {
		return
	}
	switch {
	case ev.Has(fsnotify.Create):
		s.stored.Add(1)
		s.added(name)
	case ev.Has(fsnotify.Remove):
		s.deleted.Add(1)
		s.removed(name)
	}
}

// evicted is what left the folder other than by a purge.
func (s *store) evicted() int64 { return max(0, s.deleted.Load()-s.flushed.Load()) }
