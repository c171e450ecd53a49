package sharedmodels_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"webfarm.dev/operator/internal/model"
	webfarmscheme "webfarm.dev/operator/internal/scheme"
	"webfarm.dev/operator/internal/testutil/sharedmodels"
)

var platform = model.Platform{
	Images:  model.Images{Envoy: "envoy:v1.40.0", Nginx: "nginx:1.29", CacheAgent: "operator:dev", PullPolicy: "IfNotPresent"},
	XDSHost: "webfarm-operator-xds.webfarm-system.svc", XDSPort: 18000, ActivatorPort: 18081, ActivationTimeout: time.Minute,
}

// samples are the objects of config/samples, each stored with a UID and a
// generation as the API server would.
func samples(t *testing.T) []client.Object {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "config", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	decoder := serializer.NewCodecFactory(webfarmscheme.New()).UniversalDeserializer()
	var objs []client.Object
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range regexp.MustCompile(`(?m)^---$`).Split(string(b), -1) {
			if !strings.Contains(doc, "kind:") {
				continue
			}
			o, _, err := decoder.Decode([]byte(doc), nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			obj := o.(client.Object)
			obj.SetNamespace("contoso")
			obj.SetUID(types.UID(fmt.Sprint("uid-", len(objs))))
			obj.SetGeneration(3)
			objs = append(objs, obj)
		}
	}
	return objs
}

func TestEveryConsumerSeesTheSameModelOfTheSamples(t *testing.T) {
	api := fake.NewClientBuilder().WithScheme(webfarmscheme.New()).WithObjects(samples(t)...).Build()
	sharedmodels.Check(t, api, platform, "contoso")
}
