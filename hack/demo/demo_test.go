package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"webfarm.dev/operator/internal/testutil"
)

func TestTheDemoReconcilesTheSamplesAndCleansUp(t *testing.T) {
	root := testutil.RepoRoot()
	manager := filepath.Join(t.TempDir(), "manager")
	build := exec.Command("go", "build", "-o", manager, "./cmd/manager")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the operator: %v\n%s", err, out)
	}
	if err := run(context.Background(), root, manager, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, ".demo")); !os.IsNotExist(err) {
		t.Errorf("the demo left .demo/ behind (stat: %v)", err)
	}
}
