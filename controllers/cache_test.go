package controllers

import (
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

// TestCacheHoldsOnlyTheRunsWorkflows: the manager's cache takes the Workflows the operator
// submitted for BenchmarkRuns (they carry the run's label), not the cluster's others; where
// Argo is not served it names no Workflow (the manager would not start).
func TestCacheHoldsOnlyTheRunsWorkflows(t *testing.T) {
	for obj := range CacheOptions("", false).ByObject {
		if _, ok := obj.(*wfv1.Workflow); ok {
			t.Error("without Argo the cache still configures Workflows")
		}
	}
	for obj, by := range CacheOptions("", true).ByObject {
		if _, ok := obj.(*wfv1.Workflow); !ok {
			continue
		}
		if by.Label == nil || !by.Label.Matches(labels.Set{v1alpha1.BenchmarkRunLabel: "sweep"}) || by.Label.Matches(labels.Set{"app": "deploy"}) || by.Label.Matches(labels.Set{}) {
			t.Errorf("Workflow cache selector %v: want the BenchmarkRun label required", by.Label)
		}
		return
	}
	t.Error("the cache takes every Workflow of the cluster")
}
