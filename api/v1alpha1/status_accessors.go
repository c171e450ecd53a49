package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Accessors that let the reconcilers share one status writer for all kinds.

// StatusConditions returns the farm's conditions for updating in place.
func (f *WebFarm) StatusConditions() *[]metav1.Condition { return &f.Status.Conditions }

// SetObservedGeneration records the generation the status describes.
func (f *WebFarm) SetObservedGeneration(g int64) { f.Status.ObservedGeneration = g }

// StatusConditions returns the pool's conditions for updating in place.
func (p *AppPool) StatusConditions() *[]metav1.Condition { return &p.Status.Conditions }

// SetObservedGeneration records the generation the status describes.
func (p *AppPool) SetObservedGeneration(g int64) { p.Status.ObservedGeneration = g }

// StatusConditions returns the policy's conditions for updating in place.
func (c *CachePolicy) StatusConditions() *[]metav1.Condition { return &c.Status.Conditions }

// SetObservedGeneration records the generation the status describes.
func (c *CachePolicy) SetObservedGeneration(g int64) { c.Status.ObservedGeneration = g }
