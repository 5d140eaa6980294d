package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/steps"
)

// errModelsTraining stops a reconcile whose index (or new field) waits for its models:
// run.progressing says which.
var errModelsTraining = errors.New("models training")

// waitingOnModels is a step that stops, and looks again soon, while models train.
func waitingOnModels(name string, run func(context.Context, *indexRun) error) steps.Step[*indexRun] {
	return steps.Step[*indexRun]{Name: name, Run: func(ctx context.Context, ir *indexRun) steps.Result {
		if err := run(ctx, ir); !errors.Is(err, errModelsTraining) {
			return steps.Done(err)
		}
		return steps.StopFor(progressPollInterval)
	}}
}

// modelsReady makes sure the model of each trained field among fields exists and is
// created, training the missing ones from their sample with the k-NN training API, and
// records them in status.models. It returns errModelsTraining while one trains. A model
// of the name the operator did not train is used when its dimension and space type match.
func (r *VectorIndexReconciler) modelsReady(ctx context.Context, run *indexRun, fields []v1alpha1.VectorField) error {
	var training []string
	for _, f := range fields {
		if f.Training == nil {
			continue
		}
		id := f.Training.ModelID
		m, err := run.osClient.GetModel(ctx, id)
		if opensearch.IsNotFound(err) {
			if err := r.train(ctx, run, f); err != nil {
				return err
			}
			m, err = opensearch.Model{ID: id, State: opensearch.ModelTraining, Description: indexspec.ModelDescription(run.owner)}, nil
		}
		if err != nil {
			return err
		}
		mine := indexspec.ModelTrainedBy(m.Description, run.owner.UID)
		setModelStatus(run.vi, v1alpha1.ModelStatus{Field: f.Name, ModelID: id, State: m.State, TrainedByOperator: mine})
		switch {
		case m.State == opensearch.ModelFailed && mine:
			// Deleted, so the next attempt trains it again (a sample may have grown, memory
			// may have freed).
			if err := run.osClient.DeleteModel(ctx, id); err != nil {
				return err
			}
			r.Recorder.Eventf(run.vi, nil, corev1.EventTypeWarning, v1alpha1.ReasonTrainingFailed, "Train", "training model %s failed: %s", id, m.Error)
			return &reasonError{reason: v1alpha1.ReasonTrainingFailed, transient: true,
				message: fmt.Sprintf("training model %s for field %s failed, it is trained again: %s", id, f.Name, m.Error)}
		case m.State == opensearch.ModelFailed:
			return &conflictError{msg: fmt.Sprintf("model %s, which this object did not train, failed training: %s", id, m.Error)}
		case m.State == opensearch.ModelCreated && !mine && (m.Dimension != int(f.Dimension) || !strings.EqualFold(m.SpaceType, f.SpaceType)):
			return &conflictError{msg: fmt.Sprintf("model %s, which this object did not train, has dimension %d and space type %s; field %s declares %d and %s",
				id, m.Dimension, m.SpaceType, f.Name, f.Dimension, f.SpaceType)}
		case m.State != opensearch.ModelCreated:
			training = append(training, id)
		}
	}
	if len(training) == 0 {
		return nil
	}
	run.progressing = "training model " + strings.Join(training, ", ") + "; the index waits for it"
	return errModelsTraining
}

// train starts training a field's model, after checking its sample is there and large
// enough: faiss needs at least as many vectors as IVF buckets (nlist).
func (r *VectorIndexReconciler) train(ctx context.Context, run *indexRun, f v1alpha1.VectorField) error {
	sample, field := f.Training.Index, f.Training.SampleField(f.Name)
	count, err := run.osClient.Count(ctx, sample, field)
	if opensearch.IsNotFound(err) {
		return &reasonError{reason: v1alpha1.ReasonTrainingSampleMissing, transient: true,
			message: fmt.Sprintf("field %s: the sample index %s does not exist; the model is trained once it does", f.Name, sample)}
	}
	if err != nil {
		return err
	}
	usable := count
	if f.Training.MaxVectors != nil {
		usable = min(usable, int64(*f.Training.MaxVectors))
	}
	if nlist := indexspec.Nlist(f); usable < int64(nlist) {
		return &reasonError{reason: v1alpha1.ReasonTrainingSampleTooSmall, transient: true,
			message: fmt.Sprintf("field %s: the sample %s.%s holds %d usable vectors; method ivf with nlist %d needs at least %d", f.Name, sample, field, usable, nlist, nlist)}
	}
	if err := run.osClient.TrainModel(ctx, f.Training.ModelID, indexspec.TrainingRequest(f, run.owner)); err != nil {
		return err
	}
	r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonTrainingStarted, "Train", "training model %s from %d vectors of %s.%s", f.Training.ModelID, usable, sample, field)
	return nil
}

// deleteTrainedModels deletes, once the index is gone, the models this object trained.
func (r *VectorIndexReconciler) deleteTrainedModels(ctx context.Context, run *indexRun) error {
	for _, f := range run.vi.Spec.Fields {
		if f.Training == nil {
			continue
		}
		m, err := run.osClient.GetModel(ctx, f.Training.ModelID)
		if opensearch.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if !indexspec.ModelTrainedBy(m.Description, run.owner.UID) {
			continue
		}
		if err := run.osClient.DeleteModel(ctx, f.Training.ModelID); err != nil {
			return err
		}
		r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonModelDeleted, "Delete", "deleted model %s with index %s (deletionPolicy Delete)", f.Training.ModelID, run.name)
	}
	return nil
}

func setModelStatus(vi *v1alpha1.VectorIndex, m v1alpha1.ModelStatus) {
	for i := range vi.Status.Models {
		if vi.Status.Models[i].Field == m.Field {
			vi.Status.Models[i] = m
			return
		}
	}
	vi.Status.Models = append(vi.Status.Models, m)
}
