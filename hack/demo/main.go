// Command demo is `make demo`: the operator on a real Kubernetes serving the
// sample farm. By default it runs on the local single-node cluster
// (hack/cluster; started if needed, with the project's images loaded); with
// --existing-cluster it uses the cluster in KUBECONFIG instead. Either way it
// installs charts/webfarm-operator with Helm, applies config/samples/ in a
// namespace that enforces the restricted Pod Security profile, waits until
// everything is Ready, prints how to reach the farm and look at it, and on
// Ctrl-C removes what it created.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"webfarm.dev/operator/internal/devcluster"
	"webfarm.dev/operator/internal/vocabulary"
)

type options struct {
	existingCluster bool
	kubeconfig      string
	namespace       string
	set             []string
	once            bool
	keep            bool
}

func main() {
	var o options
	flag.BoolVar(&o.existingCluster, "existing-cluster", false,
		"use the cluster in $KUBECONFIG (or --kubeconfig) instead of the local cluster; its nodes must be able to pull the images (see --set)")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to use; implies --existing-cluster")
	flag.StringVar(&o.namespace, "namespace", "webfarm-demo", "namespace for the sample farm (created with the restricted Pod Security profile)")
	flag.Func("set", "a Helm value for the operator's chart, key=value (repeatable), e.g. image.registry=registry.example/webfarm",
		func(v string) error { o.set = append(o.set, v); return nil })
	flag.BoolVar(&o.once, "once", false, "exit once the samples are Ready instead of waiting for Ctrl-C")
	flag.BoolVar(&o.keep, "keep", false, "leave the cluster, the operator and the samples running on exit")
	flag.Parse()
	if o.kubeconfig != "" {
		o.existingCluster = true
	} else if o.existingCluster {
		o.kubeconfig = os.Getenv("KUBECONFIG")
		if o.kubeconfig == "" {
			o.kubeconfig = filepath.Join(os.Getenv("HOME"), ".kube", "config")
		}
	}

	if err := runUntilSignal(o); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// runUntilSignal runs the demo until it ends or Ctrl-C (or SIGTERM) stops it.
func runUntilSignal(o options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := devcluster.RepoRoot()
	if err != nil {
		return err
	}
	return run(ctx, root, o, os.Stdout)
}

var samples = []string{"webfarm/contoso", "apppool/www", "apppool/images", "cachepolicy/static-content"}

// The sample site served over HTTPS, and the Secret its certificate is in.
const (
	shopHost   = "shop.contoso.example"
	shopSecret = "contoso-shop-tls"
)

func run(ctx context.Context, root string, o options, out io.Writer) (err error) {
	step := func(msg string) { fmt.Fprintf(out, "\033[1;34m==>\033[0m %s\n", msg) }
	// Teardown runs after Ctrl-C too, so it gets a context of its own.
	cleanup := func(what string, f func(context.Context) error) {
		if o.keep {
			return
		}
		step(what)
		c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		err = errors.Join(err, f(c))
	}

	kubeconfig := o.kubeconfig
	local := !o.existingCluster
	if local {
		step("starting the local cluster (hack/cluster/up.sh)")
		cluster, err := devcluster.StartLocal(ctx, root, out)
		if cluster != nil && cluster.StartedHere() {
			defer cleanup("stopping the local cluster", func(context.Context) error { return cluster.Stop() })
		}
		if err != nil {
			return err
		}
		kubeconfig = cluster.Kubeconfig()
	}
	k := devcluster.NewKubectl(root, kubeconfig)

	release := devcluster.DefaultRelease()
	release.Set = o.set
	chart := "charts/webfarm-operator"
	if local {
		// Unsigned: a first look needs no signatures, nor cosign's and syft's
		// builds (make release signs).
		step("publishing the images and the chart to the local registry (hack/release.sh --unsigned)")
		if release.From, err = devcluster.Publish(ctx, root, "", false, out); err != nil {
			return err
		}
		chart = release.From.Chart + " --version " + release.From.Version
	}
	step(fmt.Sprintf("installing the operator: helm upgrade --install %s %s -n %s", release.Name, chart, release.Namespace))
	created, err := release.Install(ctx, root, k, out)
	if err != nil {
		return err
	}
	if created {
		defer cleanup("uninstalling the operator", func(c context.Context) error { return release.Uninstall(c, root, k, out) })
	}

	step(fmt.Sprintf("applying config/samples/ in namespace %s (restricted Pod Security enforced)", o.namespace))
	if err := devcluster.EnsureNamespace(ctx, k, o.namespace); err != nil {
		return err
	}
	defer cleanup("deleting namespace "+o.namespace, func(c context.Context) error {
		return devcluster.DeleteNamespace(c, k, o.namespace, 2*time.Minute)
	})
	// The shop site's HTTPS certificate, as cert-manager's self-signed issuer
	// would make it; its CA goes where the printed curl finds it.
	cert, err := devcluster.NewSiteCertificate(shopSecret, []string{shopHost}, 30*24*time.Hour, time.Now())
	if err != nil {
		return err
	}
	caFile := filepath.Join(root, ".demo", "contoso-ca.crt")
	if err := os.MkdirAll(filepath.Dir(caFile), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(caFile, cert.CA, 0o644); err != nil {
		return err
	}
	if _, err := k.RunWithInput(ctx, cert.Secret, "apply", "-n", o.namespace, "-f", "-"); err != nil {
		return err
	}
	applied, err := k.Run(ctx, "apply", "-n", o.namespace, "-f", filepath.Join(root, "config", "samples"))
	if err != nil {
		return err
	}
	fmt.Fprint(out, applied)

	step("waiting until the farm, its pools and its cache tier are Ready")
	if err := k.WaitReady(ctx, o.namespace, 4*time.Minute, samples...); err != nil {
		listing, _ := k.Run(ctx, "get", "-n", o.namespace, "web,deployments,pods", "-o", "wide")
		return fmt.Errorf("%w\n%s", err, listing)
	}
	listing, err := k.Run(ctx, "get", "-n", o.namespace, "web,deployments,services,pods")
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	fmt.Fprint(out, listing)

	reach, err := howToReach(ctx, k, o.namespace, local, caFile)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nThe sample farm is Ready. In another terminal:\n\n")
	printCommands(out, [][2]string{
		{"export KUBECONFIG=" + kubeconfig, ""},
		{"export PATH=" + filepath.Join(root, "bin") + ":$PATH", "the project's kubectl and helm"},
		{"kubectl get web -n " + o.namespace, "farms, pools, cache policies (wf, ap, cp)"},
		{"kubectl describe webfarm contoso -n " + o.namespace, "conditions and events"},
		{"kubectl explain apppool.spec.queue", "every field is documented"},
		{"kubectl edit apppool www -n " + o.namespace, "a change rolls the pool's pods"},
		{"kubectl get pods -n " + o.namespace + " -w", ""},
	})
	fmt.Fprintln(out)
	printCommands(out, reach)
	if o.once {
		return nil
	}
	fmt.Fprintln(out, "Press Ctrl-C to stop and clean up.")
	<-ctx.Done()
	fmt.Fprintln(out)
	return nil
}

// howToReach tells how to send requests to the sample pools. On the local
// cluster Services are reachable from the host, and the demo checks that the
// commands it prints work.
func howToReach(ctx context.Context, k devcluster.Kubectl, namespace string, local bool, caFile string) ([][2]string, error) {
	if !local {
		return [][2]string{
			{"kubectl port-forward -n " + namespace + " service/contoso-frontend 8080:80 8443:443 &", "the farm's Envoy frontend on this machine"},
			{"curl -s -H 'Host: www.contoso.example' http://127.0.0.1:8080/", ""},
			{"curl -s --cacert " + caFile + " --resolve " + shopHost + ":8443:127.0.0.1 https://" + shopHost + ":8443/", "the shop over HTTPS, its certificate checked"},
		}, nil
	}
	get := func(service, field string) (string, error) {
		return k.Run(ctx, "get", "service", "-n", namespace, service, "-o", "jsonpath={"+field+"}")
	}
	www, err := get("www-pool", ".spec.clusterIP")
	if err != nil {
		return nil, err
	}
	cache, err := get("static-content-cache", ".spec.clusterIP")
	if err != nil {
		return nil, err
	}
	nodePort, err := get("contoso-frontend", ".spec.ports[0].nodePort")
	if err != nil {
		return nil, err
	}
	node, err := k.Run(ctx, "get", "nodes", "-o", `jsonpath={.items[0].status.addresses[?(@.type=="InternalIP")].address}`)
	if err != nil {
		return nil, err
	}
	httpsPort, err := get("contoso-frontend", `.spec.ports[?(@.name=="https")].nodePort`)
	if err != nil {
		return nil, err
	}
	front := "http://" + node + ":" + nodePort
	checks := [][2]string{{front + "/", "www.contoso.example"}, {"http://" + www + "/", ""}}
	for _, c := range checks {
		if err := devcluster.Poll(ctx, 60*time.Second, 500*time.Millisecond, func() error { return expectOK(ctx, c[0], c[1]) }); err != nil {
			return nil, fmt.Errorf("the sample farm does not answer: %w", err)
		}
	}
	shop := "https://" + shopHost + ":" + httpsPort + "/"
	if err := devcluster.Poll(ctx, 60*time.Second, 500*time.Millisecond, func() error {
		return expectHTTPS(ctx, shop, node+":"+httpsPort, caFile)
	}); err != nil {
		return nil, fmt.Errorf("the shop does not answer over HTTPS: %w", err)
	}
	return [][2]string{
		{"curl -s -H 'Host: www.contoso.example' " + front + "/", "the farm through its Envoy frontend (NodePort)"},
		{"curl -si -H 'Host: www.contoso.example' " + front + "/images/logo.svg", "the images pool through the cache tier: X-Cache-Status MISS, then HIT"},
		{"curl -s -H 'Host: shop.contoso.example' " + front + "/", "another site of the farm"},
		{"curl -s --cacert " + caFile + " --resolve " + shopHost + ":" + httpsPort + ":" + node + " " + shop, "the shop over HTTPS, its certificate checked"},
		{"curl -s http://" + www + "/", "the www pool (nginx) alone, through its Service"},
		{"curl -si -H '" + vocabulary.PoolHeader + ": images' http://" + cache + "/logo.svg", "the cache tier alone"},
	}, nil
}

// printCommands prints shell commands with their comments aligned.
func printCommands(out io.Writer, commands [][2]string) {
	width := 0
	for _, c := range commands {
		width = max(width, len(c[0]))
	}
	for _, c := range commands {
		if c[1] == "" {
			fmt.Fprintf(out, "  %s\n", c[0])
		} else {
			fmt.Fprintf(out, "  %-*s   # %s\n", width, c[0], c[1])
		}
	}
}

// expectHTTPS sends a GET over HTTPS to url, connecting to address and
// trusting only the CA in caFile (as the printed curl --cacert --resolve
// does), and wants 200.
func expectHTTPS(ctx context.Context, url, address, caFile string) error {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	transport := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, address)
		},
	}
	defer transport.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: 2 * time.Second, Transport: transport}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// expectOK sends a GET (with a Host header unless host is empty) and wants 200.
func expectOK(ctx context.Context, url, host string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if host != "" {
		req.Host = host
	}
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}
