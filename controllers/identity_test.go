package controllers_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"webfarm.dev/operator/internal/identity"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

// identityOf reads a farm's identity Secret's certificate.
func identityOf(ns, farm string) (*x509.Certificate, *corev1.Secret, error) {
	var s corev1.Secret
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: vocabulary.FrontendIdentityName(farm)}, &s); err != nil {
		return nil, nil, err
	}
	block, _ := pem.Decode(s.Data[vocabulary.IdentityCertKey])
	if block == nil {
		return nil, &s, errors.New("no PEM certificate")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	return c, &s, err
}

// A farm's frontends get an identity naming the farm, in a Secret the farm
// owns and the frontend mounts; it is written again when two thirds of its
// life have passed.
func TestAFarmsIdentityIsWrittenForItsFrontendAndRenewedWhenDue(t *testing.T) {
	ns := newNamespace(t)
	farm := webFarm(ns, "web")
	create(t, farm)
	var first *x509.Certificate
	testutil.Eventually(t, timeout, func() error {
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(farm), farm); err != nil {
			return err
		}
		c, s, err := identityOf(ns, "web")
		if err != nil {
			return err
		}
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != farm.UID {
			return fmt.Errorf("owner references %v, want the farm", s.OwnerReferences)
		}
		if len(s.Data[vocabulary.IdentityKeyKey]) == 0 || len(s.Data[vocabulary.IdentityCAKey]) == 0 {
			return errors.New("the Secret lacks the key or the CA")
		}
		first = c
		return nil
	})
	if namespace, name, err := identity.FarmOf(first); err != nil || namespace != ns || name != "web" {
		t.Errorf("the identity names %s/%s (%v), want %s/web", namespace, name, err, ns)
	}
	testutil.Eventually(t, timeout, func() error {
		var d appsv1.Deployment
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: vocabulary.FrontendName("web")}, &d); err != nil {
			return err
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil && v.Secret.SecretName == vocabulary.FrontendIdentityName("web") {
				return nil
			}
		}
		return fmt.Errorf("the frontend does not mount its identity: volumes %v", d.Spec.Template.Spec.Volumes)
	})

	operatorClock.step(t, identityLifetime*2/3+time.Minute)
	// A change of the farm has it reconciled now (its requeue waits for the real time).
	patch := client.MergeFrom(farm.DeepCopy())
	farm.Annotations = map[string]string{"example.com/touched": "1"}
	if err := k8sClient.Patch(context.Background(), farm, patch); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, timeout, func() error {
		c, _, err := identityOf(ns, "web")
		if err != nil {
			return err
		}
		if c.SerialNumber.Cmp(first.SerialNumber) == 0 {
			return errors.New("the identity was not renewed at two thirds of its life")
		}
		return nil
	})
}
