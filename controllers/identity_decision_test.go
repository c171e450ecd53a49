package controllers

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestIdentityDue(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	written := issuedIdentity{uid: "farm-1", renewAt: now.Add(time.Hour)}
	tests := []struct {
		name      string
		written   issuedIdentity
		known     bool
		uid       types.UID
		wantIssue bool
		wantIn    time.Duration
	}{
		{"a farm this replica wrote no identity for gets one now", issuedIdentity{}, false, "farm-1", true, 0},
		{"an identity before its renewal time is kept until then", written, true, "farm-1", false, time.Hour},
		{"an identity at its renewal time is issued again", issuedIdentity{uid: "farm-1", renewAt: now}, true, "farm-1", true, 0},
		{"a farm recreated under its name gets a new identity", written, true, "farm-2", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			issue, in := identityDue(tt.written, tt.known, tt.uid, now)
			if issue != tt.wantIssue || in != tt.wantIn {
				t.Errorf("identityDue = %v, %s; want %v, %s", issue, in, tt.wantIssue, tt.wantIn)
			}
		})
	}
}
