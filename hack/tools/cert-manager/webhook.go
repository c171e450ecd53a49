package main

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/spf13/pflag"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	acmev1 "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	servertls "github.com/cert-manager/cert-manager/pkg/server/tls"
	"github.com/cert-manager/cert-manager/pkg/server/tls/authority"
	"github.com/cert-manager/cert-manager/pkg/util"
	"github.com/cert-manager/cert-manager/pkg/webhook/server"
)

type webhookFlags struct {
	master, kubeconfig              string
	securePort, healthzPort         int
	caSecretNamespace, caSecretName string
	dnsNames                        []string
	leafDuration                    time.Duration
	certFile, keyFile               string
	cipherSuites                    []string
	minTLSVersion                   string
	metricsAddress                  string
	clientVerification              bool
	clientCAPath                    string
	clientSubjects                  []string
}

func addWebhookFlags(fs *pflag.FlagSet) *webhookFlags {
	f := &webhookFlags{}
	fs.StringVar(&f.master, "master", "", "address of the Kubernetes API server (default: in-cluster)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster)")
	fs.IntVar(&f.securePort, "secure-port", 6443, "port of the HTTPS admission endpoint")
	fs.IntVar(&f.healthzPort, "healthz-port", 6080, "port of the plain HTTP /healthz and /livez endpoints")
	fs.StringVar(&f.caSecretNamespace, "dynamic-serving-ca-secret-namespace", "", "namespace of the Secret that holds the serving CA")
	fs.StringVar(&f.caSecretName, "dynamic-serving-ca-secret-name", "", "Secret that holds the serving CA (made if missing)")
	fs.StringSliceVar(&f.dnsNames, "dynamic-serving-dns-names", nil, "DNS names of the serving certificate")
	fs.DurationVar(&f.leafDuration, "dynamic-serving-leaf-duration", 7*24*time.Hour, "validity of the serving certificate")
	fs.StringVar(&f.certFile, "tls-cert-file", "", "serving certificate file (instead of a dynamic one)")
	fs.StringVar(&f.keyFile, "tls-private-key-file", "", "serving private key file (instead of a dynamic one)")
	fs.StringSliceVar(&f.cipherSuites, "tls-cipher-suites", nil, "TLS cipher suites (default: Go's)")
	fs.StringVar(&f.minTLSVersion, "tls-min-version", "", "minimum TLS version (default: Go's)")
	fs.StringVar(&f.metricsAddress, "metrics-listen-address", "0.0.0.0:9402", "address of the metrics endpoint ('0' turns it off)")
	fs.BoolVar(&f.clientVerification, "enable-client-verification", false, "require a client certificate signed by --client-ca-path")
	fs.StringVar(&f.clientCAPath, "client-ca-path", "", "CA of the API server's client certificates")
	fs.StringSliceVar(&f.clientSubjects, "client-subject-names", nil, "accepted subjects of client certificates")
	return f
}

// runWebhook serves cert-manager's admission webhook: it records who asked
// for each CertificateRequest (spec.username, uid, groups, extra) and keeps
// that record from changing. cert-manager's resource validation lives in
// its internal packages and is not part of this build.
func runWebhook(ctx context.Context, args []string) error {
	fs := pflag.NewFlagSet("cert-manager-webhook", pflag.ContinueOnError)
	common := addCommonFlags(fs)
	f := addWebhookFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := common.apply(); err != nil {
		return err
	}
	log := logf.Log.WithName("webhook")
	ctx = logf.NewContext(ctx, log)
	restConfig, err := clientcmd.BuildConfigFromFlags(f.master, f.kubeconfig)
	if err != nil {
		return err
	}
	// cert-manager-webhook/<version>: its field manager is named from it.
	restConfig = util.RestConfigWithUserAgent(restConfig, "webhook")
	source, err := f.certificateSource(restConfig)
	if err != nil {
		return err
	}
	s := &server.Server{
		ResourceScheme:            admissionScheme(),
		ListenAddr:                f.securePort,
		HealthzAddr:               &f.healthzPort,
		CertificateSource:         source,
		CipherSuites:              f.cipherSuites,
		MinTLSVersion:             f.minTLSVersion,
		ValidationWebhook:         requestIdentity{},
		MutationWebhook:           requestIdentity{},
		MetricsListenAddress:      f.metricsAddress,
		EnableClientVerification:  f.clientVerification,
		ClientCAPath:              f.clientCAPath,
		ClientCertificateSubjects: f.clientSubjects,
	}
	return s.Run(ctx)
}

// admissionScheme knows cert-manager's v1 kinds, and each of them also as
// its group's internal version: the validating webhook decodes requests to
// the internal version, whose types (cert-manager's internal packages) this
// build does not have, so the v1 types stand in for them unconverted.
func admissionScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(cmapi.AddToScheme(scheme))
	utilruntime.Must(acmev1.AddToScheme(scheme))
	for _, gv := range []schema.GroupVersion{cmapi.SchemeGroupVersion, acmev1.SchemeGroupVersion} {
		internal := schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}
		for kind, t := range scheme.KnownTypes(gv) {
			obj, isObject := reflect.New(t).Interface().(runtime.Object)
			if isObject && !scheme.Recognizes(internal.WithKind(kind)) { // meta's kinds have internal types
				scheme.AddKnownTypeWithName(internal.WithKind(kind), obj)
			}
		}
	}
	return scheme
}

// certificateSource is the serving certificate: from files, or signed by a
// CA kept in a Secret (the chart's way).
func (f *webhookFlags) certificateSource(restConfig *rest.Config) (servertls.CertificateSource, error) {
	switch {
	case f.certFile != "" && f.keyFile != "":
		return &servertls.FileCertificateSource{CertPath: f.certFile, KeyPath: f.keyFile}, nil
	case f.caSecretName != "" && f.caSecretNamespace != "":
		return &servertls.DynamicSource{
			DNSNames: f.dnsNames,
			Authority: &authority.DynamicAuthority{
				SecretNamespace: f.caSecretNamespace,
				SecretName:      f.caSecretName,
				SecretLabels:    map[string]string{"app.kubernetes.io/managed-by": "cert-manager-webhook"},
				LeafDuration:    f.leafDuration,
				RESTConfig:      restConfig,
			},
		}, nil
	default:
		return nil, errors.New("no serving certificate: give --tls-cert-file and --tls-private-key-file, " +
			"or --dynamic-serving-ca-secret-namespace and --dynamic-serving-ca-secret-name")
	}
}

// requestIdentity stamps each new CertificateRequest with the identity of
// the user who created it, and refuses a change of that identity: issuers
// and approvers rely on it to know who asked.
type requestIdentity struct{}

func (requestIdentity) Handles(op admissionv1.Operation) bool {
	return op == admissionv1.Create || op == admissionv1.Update
}

func (requestIdentity) Mutate(_ context.Context, req admissionv1.AdmissionRequest, obj *unstructured.Unstructured) error {
	if !isCertificateRequest(req) || req.Operation != admissionv1.Create {
		return nil
	}
	return stampIdentity(obj, req.UserInfo)
}

func (requestIdentity) Validate(_ context.Context, req admissionv1.AdmissionRequest, oldObj, obj runtime.Object) ([]string, error) {
	if !isCertificateRequest(req) || req.Operation != admissionv1.Update {
		return nil, nil
	}
	oldCR, ok1 := oldObj.(*cmapi.CertificateRequest)
	newCR, ok2 := obj.(*cmapi.CertificateRequest)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("expected two CertificateRequests, got %T and %T", oldObj, obj)
	}
	return nil, identityUnchanged(oldCR.Spec, newCR.Spec)
}

func isCertificateRequest(req admissionv1.AdmissionRequest) bool {
	return req.Kind.Group == cmapi.SchemeGroupVersion.Group && req.Kind.Kind == cmapi.CertificateRequestKind
}

// stampIdentity sets spec.username, uid, groups and extra from the user.
func stampIdentity(obj *unstructured.Unstructured, user authenticationv1.UserInfo) error {
	spec := map[string]any{"username": user.Username, "uid": user.UID}
	if len(user.Groups) > 0 {
		groups := make([]any, len(user.Groups))
		for i, g := range user.Groups {
			groups[i] = g
		}
		spec["groups"] = groups
	}
	if len(user.Extra) > 0 {
		extra := map[string]any{}
		for k, values := range user.Extra {
			vs := make([]any, len(values))
			for i, v := range values {
				vs[i] = v
			}
			extra[k] = vs
		}
		spec["extra"] = extra
	}
	for field, value := range spec {
		if err := unstructured.SetNestedField(obj.Object, value, "spec", field); err != nil {
			return err
		}
	}
	return nil
}

// identityUnchanged refuses an update that changes who asked for a request.
func identityUnchanged(old, updated cmapi.CertificateRequestSpec) error {
	if old.Username != updated.Username || old.UID != updated.UID ||
		!reflect.DeepEqual(old.Groups, updated.Groups) || !reflect.DeepEqual(old.Extra, updated.Extra) {
		return errors.New("spec.username, spec.uid, spec.groups and spec.extra of a CertificateRequest are immutable")
	}
	return nil
}
