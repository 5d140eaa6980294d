package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/rebuild"
	"github.com/vectorpilot/vectorpilot/internal/recall"
	"github.com/vectorpilot/vectorpilot/internal/steps"
)

// rebuildAPI is what a blue/green rebuild asks of OpenSearch beyond an index reconcile.
type rebuildAPI interface {
	SeqNos(ctx context.Context, index string) ([]int64, error)
	Refresh(ctx context.Context, index string) error
	StartReindex(ctx context.Context, source, target string, shard, shards int, afterSeqNo int64, docsPerSecond int) (string, error)
	GetTask(ctx context.Context, id string) (opensearch.Task, error)
	RunningReindexes(ctx context.Context) ([]opensearch.Task, error)
	CancelTask(ctx context.Context, id string) error
	CreateAliasedIndex(ctx context.Context, name, alias string, settings, properties, meta map[string]any) error
	Reindex(ctx context.Context, source, target string, shard, shards int, afterSeqNo int64) (opensearch.Task, error)
	Clone(ctx context.Context, source, target string, settings map[string]any) error
	UpdateAliases(ctx context.Context, actions ...opensearch.AliasAction) error
	Warmup(ctx context.Context, index string) error
	DocCount(ctx context.Context, index string) (int64, error)
	ExtraIDs(ctx context.Context, index, other string) ([]string, error)
	DeleteDocuments(ctx context.Context, index string, ids []string) error
}

// rebuildPoll is how often a rebuild's copy is looked at while it runs.
const rebuildPoll = 3 * time.Second

// gateQueriesPerSecond paces the gate's searches (four per sampled query).
const gateQueriesPerSecond = 100

// rebuild carries out a change of build parameters under spec.rebuild.strategy BlueGreen,
// one phase per reconcile where it must wait: copy (passes of _reindex by sequence number),
// gate (recall and p90 against the serving index), swap (write block, final pass, counts,
// alias). Its progress lives in status.rebuild, so a restarted operator resumes it.
func (r *VectorIndexReconciler) rebuild(ctx context.Context, run *indexRun) steps.Result {
	if run.vi.Spec.IsRemoteSnapshot() {
		return steps.Continue()
	}
	if err := r.expirePrevious(ctx, run); err != nil {
		return steps.Done(err)
	}
	st := &run.vi.Status
	rb := st.Rebuild
	inFlight := rb != nil && slices.Contains([]string{v1alpha1.RebuildCopying, v1alpha1.RebuildGating, v1alpha1.RebuildSwapping}, rb.Phase)
	stale, _, err := r.rebuildNeeded(run, run.live)
	if err != nil {
		return steps.Done(err)
	}
	switch {
	case inFlight && rb.Phase != v1alpha1.RebuildSwapping && rb.ObservedGeneration != run.vi.Generation:
		// The spec moved on while the rebuild ran: a target built for the old one is of no use
		// unless it still matches.
		target, err := run.osClient.GetIndex(ctx, rb.Target)
		if err != nil && !opensearch.IsNotFound(err) {
			return steps.Done(err)
		}
		if targetStale, lacks, err := r.rebuildNeeded(run, target); err != nil || targetStale != "" || lacks || target == nil {
			if err := r.abandonRebuild(ctx, run, "the spec changed while it ran"); err != nil {
				return steps.Done(err)
			}
			return steps.After(time.Second)
		}
		rb.ObservedGeneration = run.vi.Generation
	case !inFlight && stale == "":
		return steps.Continue()
	case !inFlight && !blueGreen(run.vi):
		// addFields reports the conflict, as without a rebuild strategy.
		return steps.Continue()
	case !inFlight && rb != nil && rb.ObservedGeneration == run.vi.Generation:
		// This spec's rebuild ended without a swap: it stays so until the spec changes.
		run.rebuilding = true
		return steps.Done(endedWithoutSwap(run, stale))
	case !inFlight:
		if err := r.startRebuild(ctx, run, stale); err != nil {
			return steps.Done(err)
		}
	}
	run.rebuilding = true
	res := r.advanceRebuild(ctx, run)
	if st.Rebuild != nil {
		switch st.Rebuild.Phase {
		case v1alpha1.RebuildSucceeded:
			run.rebuilding = false
		case v1alpha1.RebuildCopying, v1alpha1.RebuildGating, v1alpha1.RebuildSwapping:
			run.rebuildProgress = rebuildMessage(st.Rebuild)
		default:
			if res.Err == nil {
				res.Err = endedWithoutSwap(run, stale)
			}
		}
	}
	return res
}

// endedWithoutSwap is the failure a spec whose rebuild ended without a swap stays in until
// it changes: the serving index is not what the spec declares.
func endedWithoutSwap(run *indexRun, stale string) error {
	rb := run.vi.Status.Rebuild
	reason := v1alpha1.ReasonRebuildFailed
	if rb.Phase == v1alpha1.RebuildGateFailed {
		reason = v1alpha1.ReasonRebuildGateFailed
	}
	return &reasonError{reason: reason, message: fmt.Sprintf("index %s still serves, unlike the spec (%s): the rebuild into %s ended %s: %s; change the spec to try again", run.live.Name, stale, rb.Target, rb.Phase, rb.Message)}
}

// blueGreen says the spec lets a build parameter change by a rebuild.
func blueGreen(vi *v1alpha1.VectorIndex) bool {
	return vi.Spec.Rebuild != nil && vi.Spec.Rebuild.Strategy == v1alpha1.RebuildBlueGreen
}

// rebuildNeeded says why an index cannot serve the spec without a rebuild: its mapping
// differs in what OpenSearch cannot change (a build parameter), or its shard count does; ""
// when it can. lacks says it lacks declared fields (which can be added).
func (r *VectorIndexReconciler) rebuildNeeded(run *indexRun, index *opensearch.Index) (why string, lacks bool, err error) {
	if index == nil {
		return "", false, nil
	}
	diff, err := mappingDiff(run, index)
	if err != nil {
		return "", false, err
	}
	reasons := diff.Conflicts
	if want := strconv.Itoa(int(run.vi.Spec.Shards)); index.Settings["index.number_of_shards"] != want {
		reasons = append(reasons, fmt.Sprintf("shards: declared %s, index has %s", want, index.Settings["index.number_of_shards"]))
	}
	return strings.Join(reasons, "; "), len(diff.Missing) > 0, nil
}

// startRebuild records a new rebuild for the spec's generation: into the index the last
// rebuild replaced when that one matches the spec (a rollback: only the writes since the
// swap are copied), else into a new index.
func (r *VectorIndexReconciler) startRebuild(ctx context.Context, run *indexRun, why string) error {
	st := &run.vi.Status
	alias := run.vi.OpenSearchIndexName()
	rb := &v1alpha1.RebuildStatus{Phase: v1alpha1.RebuildCopying, Source: run.live.Name, Target: rebuild.TargetName(alias, run.vi.Generation),
		ObservedGeneration: run.vi.Generation, StartedAt: metav1.Now()}
	if prev := st.PreviousIndex; prev != nil {
		live, err := run.osClient.GetIndex(ctx, prev.Name)
		if err != nil && !opensearch.IsNotFound(err) {
			return err
		}
		if stale, lacks, err := r.rebuildNeeded(run, live); err == nil && live != nil && stale == "" && !lacks && run.owns(live) && prev.ServingIndex == run.live.Name {
			rb.Target, rb.CopiedUpTo, rb.ReusedPrevious = prev.Name, slices.Clone(prev.ServingSeqNos), true
		}
	}
	if old := st.Rebuild; old != nil && old.Target != rb.Target && old.Target != run.live.Name && (st.PreviousIndex == nil || old.Target != st.PreviousIndex.Name) {
		// The target of an earlier rebuild that never served (failed, or superseded).
		if err := r.dropUnservedTarget(ctx, run, old.Target); err != nil {
			return err
		}
	}
	st.Rebuild = rb
	from := "copying every document"
	if rb.ReusedPrevious {
		from = "reusing the index it replaced, copying the writes made since"
	}
	r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonRebuildStarted, "Rebuild", "rebuilding index %s into %s (%s): %s", rb.Source, rb.Target, from, why)
	return nil
}

// advanceRebuild runs the rebuild's current phase, and the next ones as far as they need
// no wait.
func (r *VectorIndexReconciler) advanceRebuild(ctx context.Context, run *indexRun) steps.Result {
	rb := run.vi.Status.Rebuild
	for {
		phase := rb.Phase
		var res steps.Result
		switch phase {
		case v1alpha1.RebuildCopying:
			res = r.copyDocuments(ctx, run)
		case v1alpha1.RebuildGating:
			res = r.gate(ctx, run)
		case v1alpha1.RebuildSwapping:
			res = r.swap(ctx, run)
		default:
			return steps.Continue()
		}
		if res.Err != nil || res.RequeueAfter > 0 || rb.Phase == phase {
			if res.Err != nil {
				rb.Message = res.Err.Error()
			}
			return res
		}
	}
}

// copyDocuments runs the copy's passes: the first copies every document (or, reusing the
// previous index, the writes since its swap), each next one the writes made during the one
// before, until a pass copies few enough for the final one to be short.
func (r *VectorIndexReconciler) copyDocuments(ctx context.Context, run *indexRun) steps.Result {
	rb := run.vi.Status.Rebuild
	if err := r.ensureTarget(ctx, run); err != nil {
		return steps.Done(err)
	}
	if len(rb.Tasks) > 0 {
		pass, err := r.readPass(ctx, run)
		switch {
		case err != nil:
			return steps.Done(err)
		case pass.lost != "":
			// The pass runs again (overwrites by id).
			rb.Tasks, rb.PassUpTo, rb.Message = nil, nil, pass.lost+"; copying again"
		case !pass.done:
			recordCopyProgress(rb, pass.Task)
			return steps.After(rebuildPoll)
		case len(pass.Failures) > 0:
			return steps.Done(r.failRebuild(ctx, run, fmt.Sprintf("copying into %s: %d documents failed, first: %s", rb.Target, len(pass.Failures), pass.Failures[0])))
		default:
			completePass(rb, pass.Task)
			if rebuild.CaughtUp(rb.Passes, pass.Done) {
				rb.Phase, rb.Message = v1alpha1.RebuildGating, ""
				return steps.Continue()
			}
		}
	}
	if err := r.startPass(ctx, run, r.docsPerSecond(run)); err != nil {
		return steps.Done(err)
	}
	return steps.After(rebuildPoll)
}

// passState is a pass's tasks read together: their summed progress, done once all
// completed, lost (with why) when one vanished with its node or failed as a whole.
type passState struct {
	opensearch.Task
	done bool
	lost string
}

func (r *VectorIndexReconciler) readPass(ctx context.Context, run *indexRun) (passState, error) {
	rb := run.vi.Status.Rebuild
	pass := passState{done: true}
	for _, id := range rb.Tasks {
		task, err := run.osClient.GetTask(ctx, id)
		switch {
		case opensearch.IsNotFound(err):
			pass.lost = "the copy's task " + id + " was lost (its node restarted)"
			continue
		case err != nil:
			return pass, err
		case task.Completed && task.Error != "":
			pass.lost = "the copy's task " + id + " failed (" + task.Error + ")"
		}
		pass.Done += task.Done
		pass.Total += task.Total
		pass.Running = max(pass.Running, task.Running)
		pass.Failures = append(pass.Failures, task.Failures...)
		pass.done = pass.done && task.Completed
	}
	if pass.lost != "" && pass.done {
		return pass, nil
	}
	if pass.lost != "" {
		// Others still run: wait for them before the pass starts again.
		pass.lost = ""
		pass.done = false
	}
	return pass, nil
}

// completePass records a pass that copied everything it was to.
func completePass(rb *v1alpha1.RebuildStatus, pass opensearch.Task) {
	recordCopyProgress(rb, pass)
	rb.CopiedUpTo, rb.PassUpTo, rb.Tasks = rb.PassUpTo, nil, nil
	rb.Passes++
}

// copiedUpTo is where shard's copy stands: -1 before anything was copied.
func copiedUpTo(rb *v1alpha1.RebuildStatus, shard int) int64 {
	if shard < len(rb.CopiedUpTo) {
		return rb.CopiedUpTo[shard]
	}
	return -1
}

// startPass starts one _reindex per shard of the source, each copying its shard's writes
// after where the last pass left it, and records the checkpoints it will have copied up to
// once done.
func (r *VectorIndexReconciler) startPass(ctx context.Context, run *indexRun, docsPerSecond int) error {
	rb := run.vi.Status.Rebuild
	checkpoints, err := r.preparePass(ctx, run)
	if err != nil {
		return err
	}
	perShard := 0
	if docsPerSecond > 0 {
		perShard = max(docsPerSecond/len(checkpoints), 1)
	}
	rb.Tasks, rb.PassUpTo = nil, checkpoints
	for shard := range checkpoints {
		task, err := run.osClient.StartReindex(ctx, rb.Source, rb.Target, shard, len(checkpoints), copiedUpTo(rb, shard), perShard)
		if err != nil {
			return err
		}
		rb.Tasks = append(rb.Tasks, task)
	}
	rb.DocumentsCopied, rb.DocumentsTotal, rb.DocumentsPerSecond, rb.ETA = 0, 0, "", nil
	return nil
}

// preparePass cancels (and waits for) copy tasks an operator started and did not record
// (it stopped before writing status), so no older copy of a document lands after a newer
// one; then reads the source's checkpoints and refreshes it, so the pass sees every write
// up to them.
func (r *VectorIndexReconciler) preparePass(ctx context.Context, run *indexRun) ([]int64, error) {
	rb := run.vi.Status.Rebuild
	running, err := run.osClient.RunningReindexes(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range running {
		if t.Description == opensearch.ReindexDescription(rb.Source, rb.Target) {
			if err := run.osClient.CancelTask(ctx, t.ID); err != nil {
				return nil, err
			}
		}
	}
	checkpoints, err := run.osClient.SeqNos(ctx, rb.Source)
	if err != nil {
		return nil, err
	}
	return checkpoints, run.osClient.Refresh(ctx, rb.Source)
}

// finalPass copies, under the write block, what was written since the last pass: shard by
// shard, waited for (it is short: the last pass before it copied few documents).
func (r *VectorIndexReconciler) finalPass(ctx context.Context, run *indexRun) error {
	rb := run.vi.Status.Rebuild
	// SetWriteBlock returned once the writes admitted before the block were done, so these
	// checkpoints are the source's last.
	checkpoints, err := r.preparePass(ctx, run)
	if err != nil {
		return err
	}
	var pass opensearch.Task
	for shard := range checkpoints {
		t, err := run.osClient.Reindex(ctx, rb.Source, rb.Target, shard, len(checkpoints), copiedUpTo(rb, shard))
		if err != nil {
			return err
		}
		if len(t.Failures) > 0 {
			return r.failRebuild(ctx, run, fmt.Sprintf("final copy into %s: %d documents failed, first: %s", rb.Target, len(t.Failures), t.Failures[0]))
		}
		pass.Done += t.Done
		pass.Total += t.Total
		pass.Running += t.Running
	}
	pass.Completed = true
	rb.PassUpTo = checkpoints
	completePass(rb, pass)
	return nil
}

func (r *VectorIndexReconciler) docsPerSecond(run *indexRun) int {
	if p := run.vi.Spec.Rebuild; p != nil && p.MaxDocsPerSecond != nil {
		return int(*p.MaxDocsPerSecond)
	}
	return 0
}

func recordCopyProgress(rb *v1alpha1.RebuildStatus, task opensearch.Task) {
	rb.DocumentsCopied, rb.DocumentsTotal = task.Done, task.Total
	if perSecond, eta, ok := rebuild.Rate(task.Done, task.Total, task.Running, time.Now()); ok {
		rb.DocumentsPerSecond = strconv.FormatFloat(perSecond, 'f', 0, 64)
		rb.ETA = ptr.To(metav1.NewTime(eta))
		if task.Completed {
			rb.ETA = nil
		}
	}
}

// ensureTarget creates the rebuild's index with the spec's mapping and bulk-friendly
// settings (no replica, no periodic refresh) — the gate gives it the spec's — or, reusing
// the previous index, lets it take writes again.
func (r *VectorIndexReconciler) ensureTarget(ctx context.Context, run *indexRun) error {
	rb := run.vi.Status.Rebuild
	live, err := run.osClient.GetIndex(ctx, rb.Target)
	switch {
	case err == nil && !run.owns(live):
		return &conflictError{msg: fmt.Sprintf("index %s, the rebuild's target, exists and is not this object's; left untouched", rb.Target)}
	case err == nil && rb.ReusedPrevious && live.Settings[opensearch.WriteBlockSetting] == "true":
		return run.osClient.SetWriteBlock(ctx, rb.Target, false)
	case err == nil:
		return nil
	case !opensearch.IsNotFound(err):
		return err
	}
	props, err := indexspec.Properties(&run.vi.Spec)
	if err != nil {
		return err
	}
	if err := r.modelsReady(ctx, run, run.vi.Spec.Fields); err != nil {
		return err
	}
	settings := indexspec.CreateSettings(&run.vi.Spec)
	settings["index.number_of_replicas"] = 0
	settings["index.refresh_interval"] = "-1"
	return run.osClient.CreateIndex(ctx, rb.Target, settings, props, indexspec.MetaOf(run.owner))
}

// gate gives the target the spec's settings, waits for its shards, warms both indexes'
// graphs, and compares them on the same sampled queries, field by field.
func (r *VectorIndexReconciler) gate(ctx context.Context, run *indexRun) steps.Result {
	rb := run.vi.Status.Rebuild
	target, err := run.osClient.GetIndex(ctx, rb.Target)
	if err != nil {
		return steps.Done(err)
	}
	if diff := indexspec.SettingsDiff(indexspec.DynamicSettings(&run.vi.Spec, run.tunedSlices), target.Settings); diff != nil {
		if err := run.osClient.PutSettings(ctx, rb.Target, diff); err != nil {
			return steps.Done(err)
		}
	}
	if err := run.osClient.Refresh(ctx, rb.Target); err != nil {
		return steps.Done(err)
	}
	ts, err := run.osClient.Stats(ctx, rb.Target)
	if err != nil {
		return steps.Done(err)
	}
	source, err := run.indexStats(ctx)
	if err != nil {
		return steps.Done(err)
	}
	if ts.ActivePrimaries < int64(run.vi.Spec.Shards) || healthRank(ts.Health) < healthRank(source.Health) {
		rb.Message = fmt.Sprintf("waiting for %s's shards (health %s, the serving index's %s)", rb.Target, ts.Health, source.Health)
		return steps.After(rebuildPoll)
	}
	for _, index := range []string{rb.Source, rb.Target} {
		if err := run.osClient.Warmup(ctx, index); err != nil {
			return steps.Done(fmt.Errorf("warming up %s: %w", index, err))
		}
	}
	g := gateOf(run.vi)
	minRecall, _ := strconv.ParseFloat(g.MinRecall, 64)
	check := rebuild.Gate{MinRecall: minRecall, MaxLatencyRegressionPercent: float64(g.MaxLatencyRegressionPercent)}
	rb.Gate = nil
	passed := true
	for _, f := range run.vi.Spec.Fields {
		cmp, err := recall.Compare(ctx, run.osClient, recall.Params{Index: rb.Source, Field: f.Name, SpaceType: f.SpaceType, K: int(g.K), SampleSize: int(g.SampleSize),
			QueriesPerSecond: gateQueriesPerSecond, Seed: time.Now().UnixNano()}, rb.Target)
		if errors.Is(err, recall.ErrNoDocuments) {
			continue // nothing to compare on this field; the counts are checked at the swap
		}
		if err != nil {
			return steps.Done(fmt.Errorf("gating field %s: %w", f.Name, err))
		}
		ok, failures := check.Check(rebuild.Figures{Recall: cmp.Source.Recall, P90: cmp.Source.P90}, rebuild.Figures{Recall: cmp.Target.Recall, P90: cmp.Target.P90})
		passed = passed && ok
		rb.Gate = append(rb.Gate, v1alpha1.RebuildGateResult{Field: f.Name, Sample: int32(cmp.Sample), K: g.K,
			SourceRecall: recall.Format(cmp.Source.Recall), TargetRecall: recall.Format(cmp.Target.Recall),
			SourceP90Ms: rebuild.Millis(cmp.Source.P90), TargetP90Ms: rebuild.Millis(cmp.Target.P90), Passed: ok, Failures: failures})
	}
	if !passed {
		msg := fmt.Sprintf("index %s failed the gate, clients stay on %s: %s", rb.Target, rb.Source, gateSummary(rb.Gate))
		setGateCondition(run.vi, metav1.ConditionTrue, v1alpha1.ReasonRebuildGateFailed, msg)
		r.Recorder.Eventf(run.vi, nil, corev1.EventTypeWarning, v1alpha1.ReasonRebuildGateFailed, "Rebuild", "%s", msg)
		rb.Phase, rb.Message, rb.FinishedAt = v1alpha1.RebuildGateFailed, msg, ptr.To(metav1.Now())
		if p := run.vi.Spec.Rebuild; p != nil && p.OnGateFailure == v1alpha1.GateFailureDelete && !rb.ReusedPrevious {
			return steps.Done(r.dropUnservedTarget(ctx, run, rb.Target))
		}
		if rb.ReusedPrevious {
			// Back to what it was: the write-blocked index kept for a rollback.
			return steps.Done(run.osClient.SetWriteBlock(ctx, rb.Target, true))
		}
		return steps.Continue()
	}
	msg := fmt.Sprintf("index %s passed the gate against %s: %s", rb.Target, rb.Source, gateSummary(rb.Gate))
	setGateCondition(run.vi, metav1.ConditionFalse, v1alpha1.ReasonRebuildGatePassed, msg)
	r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonRebuildGatePassed, "Rebuild", "%s", msg)
	rb.Phase, rb.Message = v1alpha1.RebuildSwapping, ""
	return steps.Continue()
}

// setGateCondition records the last gate's verdict (RebuildGateFailed).
func setGateCondition(vi *v1alpha1.VectorIndex, status metav1.ConditionStatus, reason, msg string) {
	conditions.SetAspect(&vi.Status.Conditions, vi.Generation, v1alpha1.ConditionRebuildGateFailed, status, reason, msg)
}

// gateOf is the spec's gate; the schema's defaults when spec.rebuild was removed while a
// rebuild ran (it finishes: removing the strategy only refuses the next change).
func gateOf(vi *v1alpha1.VectorIndex) v1alpha1.RebuildGate {
	if p := vi.Spec.Rebuild; p != nil {
		return p.Gate
	}
	return v1alpha1.RebuildGate{MinRecall: "0.9", MaxLatencyRegressionPercent: 50, K: 10, SampleSize: 100}
}

func gateSummary(results []v1alpha1.RebuildGateResult) string {
	parts := make([]string, 0, len(results))
	for _, g := range results {
		s := fmt.Sprintf("%s recall@%d %s (serving %s), p90 %sms (serving %sms)", g.Field, g.K, g.TargetRecall, g.SourceRecall, g.TargetP90Ms, g.SourceP90Ms)
		if len(g.Failures) > 0 {
			s += ": " + strings.Join(g.Failures, "; ")
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func healthRank(h string) int {
	return map[string]int{"red": 0, "yellow": 1, "green": 2}[h]
}

// swap is the cut-over: the source refuses writes, the final pass copies what was written
// since the last one, the target's documents are made exactly the source's (same count;
// ids the source deleted meanwhile deleted), and one _aliases request moves the alias. The
// phase is recorded before the block, so a restarted operator finishes it (the block stays
// until then).
func (r *VectorIndexReconciler) swap(ctx context.Context, run *indexRun) steps.Result {
	rb := run.vi.Status.Rebuild
	alias := run.vi.OpenSearchIndexName()
	if serving, err := run.osClient.GetIndex(ctx, alias); err == nil && serving.Name == rb.Target {
		// Swapped already; the operator stopped before it recorded so.
		return steps.Done(r.finishSwap(ctx, run, 0))
	}
	if rb.BlockedAt == nil {
		// Deletions made during the copy, carried over before the block: under it, only the
		// ones made since are left to find (pages without one are only counted).
		if err := r.dropDeleted(ctx, run); err != nil {
			return steps.Done(err)
		}
		// Recorded before the block, so a restarted operator knows to finish (or undo) it.
		rb.BlockedAt = ptr.To(metav1.Now())
		if err := steps.RecordIntent(ctx, r.Client, run.vi, "the write block of "+rb.Source); err != nil {
			return steps.Done(err)
		}
		rb = run.vi.Status.Rebuild
		rb.BlockedAt = ptr.To(metav1.Now())
	}
	if err := run.osClient.SetWriteBlock(ctx, rb.Source, true); err != nil {
		return steps.Done(err)
	}
	if err := r.finalPass(ctx, run); err != nil {
		return steps.Done(err)
	}
	copied := time.Now()
	if err := r.matchDocuments(ctx, run); err != nil {
		return steps.Done(err)
	}
	matched := time.Now()
	servingSeqNos, err := run.osClient.SeqNos(ctx, rb.Target)
	if err != nil {
		return steps.Done(err)
	}
	previous := rb.Source
	var actions []opensearch.AliasAction
	if rb.Source == alias {
		// The index has no alias yet: it is kept as a clone, and its name becomes the alias.
		previous = rebuild.CloneName(alias)
		if err := r.cloneSource(ctx, run, previous); err != nil {
			return steps.Done(err)
		}
		actions = []opensearch.AliasAction{opensearch.RemoveIndex(rb.Source), opensearch.AddAlias(rb.Target, alias)}
	} else {
		actions = []opensearch.AliasAction{opensearch.RemoveAlias(rb.Source, alias), opensearch.AddAlias(rb.Target, alias)}
	}
	cloned := time.Now()
	if err := run.osClient.UpdateAliases(ctx, actions...); err != nil {
		return steps.Done(err)
	}
	swapped := time.Since(cloned)
	blockedAt := rb.BlockedAt.Time
	rb.Message = fmt.Sprintf("under the write block: final copy %dms (%d documents), count and id check %dms, ", copied.Sub(blockedAt).Milliseconds(), rb.DocumentsCopied, matched.Sub(copied).Milliseconds())
	if previous != rb.Source {
		rb.Message += fmt.Sprintf("clone into %s %dms, ", previous, cloned.Sub(matched).Milliseconds())
	}
	rb.Message += fmt.Sprintf("alias swap %dms", swapped.Milliseconds())
	if err := r.retirePrevious(ctx, run, previous); err != nil {
		return steps.Done(err)
	}
	run.vi.Status.PreviousIndex = &v1alpha1.PreviousIndexStatus{Name: previous, SwappedAt: metav1.Now(), ServingIndex: rb.Target, ServingSeqNos: servingSeqNos,
		RetainUntil: metav1.NewTime(time.Now().Add(retainPrevious(run.vi)))}
	return steps.Done(r.finishSwap(ctx, run, swapped))
}

// matchDocuments makes the target hold exactly the source's documents after the final
// pass: it holds all of them (every write was copied), so equal counts mean equal sets;
// more means documents the source deleted during the copy, found by id and deleted.
func (r *VectorIndexReconciler) matchDocuments(ctx context.Context, run *indexRun) error {
	rb := run.vi.Status.Rebuild
	for attempt := 0; ; attempt++ {
		if err := run.osClient.Refresh(ctx, rb.Target); err != nil {
			return err
		}
		src, err := run.osClient.DocCount(ctx, rb.Source)
		if err != nil {
			return err
		}
		dst, err := run.osClient.DocCount(ctx, rb.Target)
		if err != nil {
			return err
		}
		switch {
		case src == dst:
			return nil
		case dst < src || attempt > 0:
			return r.failRebuild(ctx, run, fmt.Sprintf("after the final copy %s holds %d documents and %s %d; clients stay on %s", rb.Target, dst, rb.Source, src, rb.Source))
		}
		if err := r.dropDeleted(ctx, run); err != nil {
			return err
		}
	}
}

// dropDeleted deletes from the target the documents the source no longer has. Without the
// write block it is safe too: a document written again after the check is copied again by
// the next pass (a new sequence number).
func (r *VectorIndexReconciler) dropDeleted(ctx context.Context, run *indexRun) error {
	rb := run.vi.Status.Rebuild
	if err := run.osClient.Refresh(ctx, rb.Target); err != nil {
		return err
	}
	extra, err := run.osClient.ExtraIDs(ctx, rb.Target, rb.Source)
	if err != nil || len(extra) == 0 {
		return err
	}
	return run.osClient.DeleteDocuments(ctx, rb.Target, extra)
}

// cloneSource keeps an alias-less source, write-blocked, as the clone the rollback uses.
func (r *VectorIndexReconciler) cloneSource(ctx context.Context, run *indexRun, clone string) error {
	rb := run.vi.Status.Rebuild
	if live, err := run.osClient.GetIndex(ctx, clone); err == nil {
		if live.Settings["index.resize.source.name"] == rb.Source && run.owns(live) {
			return nil // cloned already, before a restart
		}
		return &conflictError{msg: fmt.Sprintf("index %s, where %s is to be kept for a rollback, exists and is not its clone; left untouched", clone, rb.Source)}
	} else if !opensearch.IsNotFound(err) {
		return err
	}
	source, err := run.osClient.GetIndex(ctx, rb.Source)
	if err != nil {
		return err
	}
	return run.osClient.Clone(ctx, rb.Source, clone, map[string]any{
		"index.number_of_replicas": source.Settings["index.number_of_replicas"], opensearch.WriteBlockSetting: true})
}

// finishSwap records the swap: the target serves, the write block's length, an Event.
func (r *VectorIndexReconciler) finishSwap(ctx context.Context, run *indexRun, swapped time.Duration) error {
	st := &run.vi.Status
	rb := st.Rebuild
	live, err := run.osClient.GetIndex(ctx, run.vi.OpenSearchIndexName())
	if err != nil {
		return err
	}
	blocked := time.Since(rb.BlockedAt.Time)
	rb.Phase, rb.FinishedAt = v1alpha1.RebuildSucceeded, ptr.To(metav1.Now())
	rb.WriteBlockedMillis = ptr.To(blocked.Milliseconds())
	if swapped > 0 {
		rb.SwapMillis = ptr.To(swapped.Milliseconds())
	}
	st.IndexName, st.IndexUUID, st.Alias = live.Name, live.UUID, run.vi.OpenSearchIndexName()
	run.live, run.stats = live, nil
	r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonRebuildSwapped, "Rebuild",
		"alias %s moved from %s to %s; writes were refused for %dms (%s); %s kept for a rollback until %s",
		st.Alias, rb.Source, rb.Target, blocked.Milliseconds(), rb.Message, ptrName(st.PreviousIndex), retainUntil(st.PreviousIndex))
	return nil
}

func ptrName(p *v1alpha1.PreviousIndexStatus) string {
	if p == nil {
		return "nothing"
	}
	return p.Name
}

func retainUntil(p *v1alpha1.PreviousIndexStatus) string {
	if p == nil {
		return "-"
	}
	return p.RetainUntil.UTC().Format(time.RFC3339)
}

func retainPrevious(vi *v1alpha1.VectorIndex) time.Duration {
	if p := vi.Spec.Rebuild; p != nil && p.RetainPrevious != nil {
		return p.RetainPrevious.Duration
	}
	return 24 * time.Hour
}

// retirePrevious hands the index kept from an earlier rebuild to the deletion policy when
// a new swap replaces it: one index is kept for a rollback, the last one replaced.
func (r *VectorIndexReconciler) retirePrevious(ctx context.Context, run *indexRun, next string) error {
	prev := run.vi.Status.PreviousIndex
	if prev == nil || prev.Name == next || prev.Name == run.vi.Status.Rebuild.Target {
		return nil
	}
	if err := r.applyPolicyTo(ctx, run, prev.Name, "replaced by "+next+" as the index kept for a rollback"); err != nil {
		return err
	}
	run.vi.Status.PreviousIndex = nil
	return nil
}

// expirePrevious applies the deletion policy to the previous index once retainPrevious is
// over.
func (r *VectorIndexReconciler) expirePrevious(ctx context.Context, run *indexRun) error {
	st := &run.vi.Status
	prev := st.PreviousIndex
	if prev == nil || time.Now().Before(prev.RetainUntil.Time) || st.Rebuild != nil && st.Rebuild.Target == prev.Name && st.Rebuild.Phase != v1alpha1.RebuildSucceeded {
		return nil
	}
	if err := r.applyPolicyTo(ctx, run, prev.Name, "spec.rebuild.retainPrevious is over"); err != nil {
		return err
	}
	st.PreviousIndex = nil
	return nil
}

// applyPolicyTo applies spec.deletionPolicy to an index that no longer serves: Delete and
// Snapshot (whose final snapshot is of the serving index) delete it, Retain leaves it in
// OpenSearch released from this object.
func (r *VectorIndexReconciler) applyPolicyTo(ctx context.Context, run *indexRun, index, why string) error {
	if owned, err := ownedIndex(ctx, run, index); !owned || err != nil {
		return err
	}
	if run.vi.Spec.DeletionPolicy == v1alpha1.DeletionPolicyRetain {
		if err := run.osClient.PutMeta(ctx, index, map[string]any{}); err != nil {
			return err
		}
		r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonPreviousIndexReleased, "Rebuild", "index %s (%s) left in OpenSearch, write-blocked, no longer managed (deletionPolicy Retain)", index, why)
		return nil
	}
	if err := run.osClient.DeleteIndex(ctx, index); err != nil {
		return err
	}
	r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonPreviousIndexDeleted, "Rebuild", "deleted index %s (%s; deletionPolicy %s)", index, why, run.vi.Spec.DeletionPolicy)
	return nil
}

// rebuildIndexes are the indexes of rebuilds besides the serving one: the one kept for a
// rollback and a target that has not served.
func rebuildIndexes(vi *v1alpha1.VectorIndex, serving string) []string {
	var out []string
	if p := vi.Status.PreviousIndex; p != nil && p.Name != serving {
		out = append(out, p.Name)
	}
	if rb := vi.Status.Rebuild; rb != nil && rb.Target != serving && !slices.Contains(out, rb.Target) {
		out = append(out, rb.Target)
	}
	return out
}

// dropUnservedTarget deletes a rebuild's target that never served clients: its documents
// are copies of the serving index's.
func (r *VectorIndexReconciler) dropUnservedTarget(ctx context.Context, run *indexRun, index string) error {
	if owned, err := ownedIndex(ctx, run, index); !owned || err != nil {
		return err
	}
	return run.osClient.DeleteIndex(ctx, index)
}

// ownedIndex says index exists under that very name (not as an alias) and is this
// object's: the only kind a rebuild deletes or releases.
func ownedIndex(ctx context.Context, run *indexRun, index string) (bool, error) {
	live, err := run.osClient.GetIndex(ctx, index)
	if opensearch.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return run.owns(live) && live.Name == index, nil
}

// stopRebuild stops a rebuild under way for good (its VectorIndex is deleted): its copy
// tasks are cancelled and a serving index it write-blocked takes writes again.
func (r *VectorIndexReconciler) stopRebuild(ctx context.Context, run *indexRun) error {
	rb := run.vi.Status.Rebuild
	if rb == nil {
		return nil
	}
	for _, task := range rb.Tasks {
		if err := run.osClient.CancelTask(ctx, task); err != nil {
			return err
		}
	}
	if rb.Phase == v1alpha1.RebuildSwapping && rb.BlockedAt != nil {
		if err := run.osClient.SetWriteBlock(ctx, rb.Source, false); err != nil && !opensearch.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// abandonRebuild stops a rebuild before its swap: the copy is cancelled and a target that
// never served is dropped (a reused previous index goes back to its write block).
func (r *VectorIndexReconciler) abandonRebuild(ctx context.Context, run *indexRun, why string) error {
	rb := run.vi.Status.Rebuild
	if err := r.stopRebuild(ctx, run); err != nil {
		return err
	}
	if rb.ReusedPrevious {
		if err := run.osClient.SetWriteBlock(ctx, rb.Target, true); err != nil {
			return err
		}
	} else if err := r.dropUnservedTarget(ctx, run, rb.Target); err != nil {
		return err
	}
	run.vi.Status.Rebuild = nil
	r.Recorder.Eventf(run.vi, nil, corev1.EventTypeNormal, v1alpha1.ReasonRebuildFailed, "Rebuild", "rebuild into %s abandoned: %s", rb.Target, why)
	return nil
}

// failRebuild ends a rebuild that cannot go on: the source takes writes again, clients stay
// on it, the target is kept for inspection.
func (r *VectorIndexReconciler) failRebuild(ctx context.Context, run *indexRun, msg string) error {
	rb := run.vi.Status.Rebuild
	if rb.BlockedAt != nil {
		if err := run.osClient.SetWriteBlock(ctx, rb.Source, false); err != nil {
			return err
		}
		rb.WriteBlockedMillis = ptr.To(time.Since(rb.BlockedAt.Time).Milliseconds())
	}
	rb.Phase, rb.Message, rb.FinishedAt, rb.Tasks, rb.PassUpTo = v1alpha1.RebuildFailed, msg, ptr.To(metav1.Now()), nil, nil
	r.Recorder.Eventf(run.vi, nil, corev1.EventTypeWarning, v1alpha1.ReasonRebuildFailed, "Rebuild", "%s", msg)
	return &reasonError{reason: v1alpha1.ReasonRebuildFailed, message: msg}
}

// rebuildMessage is the Progressing condition's message while a rebuild runs.
func rebuildMessage(rb *v1alpha1.RebuildStatus) string {
	switch rb.Phase {
	case v1alpha1.RebuildCopying:
		msg := fmt.Sprintf("rebuilding %s into %s: copy pass %d, %d of %d documents", rb.Source, rb.Target, rb.Passes+1, rb.DocumentsCopied, rb.DocumentsTotal)
		if rb.DocumentsPerSecond != "" {
			msg += ", " + rb.DocumentsPerSecond + "/s"
		}
		return msg
	case v1alpha1.RebuildGating:
		msg := fmt.Sprintf("rebuilding %s into %s: gating", rb.Source, rb.Target)
		if rb.Message != "" {
			msg += ": " + rb.Message
		}
		return msg
	default:
		return fmt.Sprintf("rebuilding %s into %s: swapping, writes refused since %s", rb.Source, rb.Target, rb.BlockedAt.UTC().Format(time.RFC3339))
	}
}
