package benchkit

import (
	"time"

	"webfarm.dev/operator/internal/testutil"
)

// CA is a certificate authority that a benchmark makes at its start, so
// that every HTTPS server it races serves the same kind of certificate and
// its clients (trusting CA.Pool) can verify them: the tests' CA.
type CA = testutil.CA

// NewCA makes a CA with an ECDSA P-256 key, valid for a day.
func NewCA() (*CA, error) { return testutil.NewCA("webfarm benchmark CA", 24*time.Hour) }
