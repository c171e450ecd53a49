package main

import (
	"context"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"
)

type caInjectorFlags struct {
	master, kubeconfig string
	namespace          string
	metricsAddress     string
	certificates       bool
	injectInto         map[string]*bool
}

func addCAInjectorFlags(fs *pflag.FlagSet) *caInjectorFlags {
	f := &caInjectorFlags{injectInto: map[string]*bool{}}
	fs.StringVar(&f.master, "master", "", "address of the Kubernetes API server (default: in-cluster)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster)")
	fs.StringVar(&f.namespace, "namespace", "", "namespace to watch (default: all)")
	fs.StringVar(&f.metricsAddress, "metrics-listen-address", "0.0.0.0:9402", "address of the metrics endpoint ('0' turns it off)")
	fs.BoolVar(&f.certificates, "enable-certificates-data-source", true, "inject CAs from Certificates (cert-manager.io/inject-ca-from)")
	for flag, kind := range map[string]string{
		"enable-mutatingwebhookconfigurations-injectable":   cainjector.MutatingWebhookConfigurationName,
		"enable-validatingwebhookconfigurations-injectable": cainjector.ValidatingWebhookConfigurationName,
		"enable-apiservices-injectable":                     cainjector.APIServiceName,
		"enable-customresourcedefinitions-injectable":       cainjector.CustomResourceDefinitionName,
	} {
		f.injectInto[kind] = fs.Bool(flag, true, "inject CA bundles into "+kind+"s")
	}
	return f
}

// runCAInjector runs cert-manager's CA injector: it copies CA bundles from
// Secrets and Certificates into webhook configurations, APIServices and CRDs
// annotated for it (the chart's webhook configurations are).
func runCAInjector(ctx context.Context, args []string) error {
	fs := pflag.NewFlagSet("cert-manager-cainjector", pflag.ContinueOnError)
	common := addCommonFlags(fs)
	election := addLeaderElectionFlags(fs)
	f := addCAInjectorFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := common.apply(); err != nil {
		return err
	}
	log := logf.Log.WithName("cainjector")
	ctx = logf.NewContext(ctx, log)
	restConfig, err := clientcmd.BuildConfigFromFlags(f.master, f.kubeconfig)
	if err != nil {
		return err
	}
	// cert-manager-cainjector/<version>: its field manager is named from it.
	restConfig = util.RestConfigWithUserAgent(restConfig, "cainjector")
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(apiregistrationv1.AddToScheme(scheme))
	utilruntime.Must(cmapi.AddToScheme(scheme))
	options := ctrl.Options{
		Scheme:                  scheme,
		Logger:                  log,
		LeaderElection:          election.enabled,
		LeaderElectionID:        "cert-manager-cainjector-leader-election",
		LeaderElectionNamespace: election.namespace,
		LeaseDuration:           &election.leaseDuration,
		RenewDeadline:           &election.renewDeadline,
		RetryPeriod:             &election.retryPeriod,
		Metrics:                 metricsserver.Options{BindAddress: f.metricsAddress},
		// Secrets are read when needed, not cached: the injector watches
		// only their metadata.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	}
	if f.namespace != "" {
		options.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{f.namespace: {}}}
	}
	mgr, err := ctrl.NewManager(restConfig, options)
	if err != nil {
		return err
	}
	enabled := map[string]bool{}
	for kind, on := range f.injectInto {
		enabled[kind] = *on
	}
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		Namespace:                    f.namespace,
		EnableCertificatesDataSource: f.certificates,
		EnabledReconcilersFor:        enabled,
	}); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
