package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

var randomToken = regexp.MustCompile(`^[0-9a-f]{64}$`)

// A cache tier's agents ask the operator for a token made once per tier: it
// survives changes of the policy (a new token would roll the tier's pods and
// empty their caches), and a ConfigMap that lost it gets a new one.
func TestACacheTierKeepsItsAgentTokenAcrossChanges(t *testing.T) {
	ns := newNamespace(t)
	static := cachePolicy(ns, "static")
	create(t, appPool(ns, "shop"), appPool(ns, "blog"), static, webFarm(ns, "web"))

	agentConfig := func() (vocabulary.AgentConfig, error) {
		var cfg vocabulary.AgentConfig
		cm := &corev1.ConfigMap{}
		if err := get(cm, ns, "static-cache"); err != nil {
			return cfg, err
		}
		return cfg, json.Unmarshal([]byte(cm.Data[vocabulary.AgentConfigFile]), &cfg)
	}
	var first vocabulary.AgentConfig
	testutil.Eventually(t, timeout, func() (err error) {
		if first, err = agentConfig(); err == nil && !randomToken.MatchString(first.AdminToken) {
			err = fmt.Errorf("agent token %q, want 64 random hex digits", first.AdminToken)
		}
		return err
	})

	t.Run("a change of the policy keeps the token", func(t *testing.T) {
		update(t, static, func() { static.Spec.FrequentHitPeriod = v1.Duration("20s") })
		testutil.Eventually(t, timeout, func() error {
			cfg, err := agentConfig()
			switch {
			case err != nil:
				return err
			case time.Duration(cfg.FrequentHitPeriod) != 20*time.Second:
				return fmt.Errorf("frequentHitPeriod %s, want 20s", time.Duration(cfg.FrequentHitPeriod))
			case cfg.AdminToken != first.AdminToken:
				return fmt.Errorf("the token changed from %q to %q", first.AdminToken, cfg.AdminToken)
			}
			return nil
		})
	})

	t.Run("a ConfigMap whose token was removed gets a new one", func(t *testing.T) {
		cfg, err := agentConfig()
		if err != nil {
			t.Fatal(err)
		}
		cfg.AdminToken = ""
		raw, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		patch, err := json.Marshal(map[string]any{"data": map[string]string{vocabulary.AgentConfigFile: string(raw)}})
		if err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{}
		cm.Namespace, cm.Name = ns, "static-cache"
		if err := k8sClient.Patch(context.Background(), cm, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, timeout, func() error {
			cfg, err := agentConfig()
			switch {
			case err != nil:
				return err
			case !randomToken.MatchString(cfg.AdminToken):
				return fmt.Errorf("agent token %q, want a new one of 64 random hex digits", cfg.AdminToken)
			case cfg.AdminToken == first.AdminToken:
				return fmt.Errorf("the token is the old one")
			}
			return nil
		})
	})
}
