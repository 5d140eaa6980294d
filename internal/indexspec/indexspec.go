// Package indexspec translates a VectorIndex spec into OpenSearch index settings and
// mappings, and compares them with a live index: what to create, which dynamic settings to
// change, which fields to add, and what conflicts make an index impossible to adopt.
package indexspec

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

// Keys of the mapping's _meta that record which VectorIndex owns an index, so a crash
// between creating an index and recording it in status never leads to a second owner.
const (
	MetaOwner = "vectorpilot.io/owner"
	MetaUID   = "vectorpilot.io/uid"
	// RestoreMarkerSetting carries, on an index OpenSearch restores for a VectorIndex, that
	// object's UID: the restore request sets it (index_settings), so it is in the index's
	// settings from the moment the index exists, and the object recognises its restore after
	// any interruption (_recovery forgets a SNAPSHOT recovery once a shard recovers again).
	// A filter on a node attribute no node has, it moves nothing; it is removed once the
	// index carries the object's _meta.
	RestoreMarkerSetting = "index.routing.allocation.exclude.vectorpilot_restored_for"
)

// Owner identifies the VectorIndex object that manages an index.
type Owner struct {
	Namespace, Name, UID string
}

func (o Owner) String() string { return o.Namespace + "/" + o.Name }

// Concurrent segment search settings.
const (
	SettingConcurrentMode = "index.search.concurrent_segment_search.mode"
	SettingMaxSliceCount  = "index.search.concurrent.max_slice_count"
)

// Slices is a concurrent segment search setting in vectorpilot's slice encoding, as the
// tuner, the benchmark and the status carry it: SlicesOff (1) is concurrent search off for
// the index, SlicesLucene (0) Lucene's default slicing, N >= 2 at most N slices.
type Slices int

// The two settings that are no slice count.
const (
	SlicesLucene Slices = 0
	SlicesOff    Slices = 1
)

// Settings are the index settings that put s in force.
func (s Slices) Settings() map[string]string {
	if s == SlicesOff {
		return map[string]string{SettingConcurrentMode: "none", SettingMaxSliceCount: "0"}
	}
	return map[string]string{SettingConcurrentMode: "all", SettingMaxSliceCount: strconv.Itoa(int(s))}
}

// String names s for people: concurrent search off, Lucene's default slicing, N slices.
func (s Slices) String() string {
	switch s {
	case SlicesOff:
		return "concurrent search off"
	case SlicesLucene:
		return "Lucene's default slicing"
	default:
		return fmt.Sprintf("%d slices", int(s))
	}
}

// Short is s in a table's column: off, lucene or N.
func (s Slices) Short() string {
	switch s {
	case SlicesOff:
		return "off"
	case SlicesLucene:
		return "lucene"
	default:
		return strconv.Itoa(int(s))
	}
}

// SlicesOf is the setting in force by an index's flat settings.
func SlicesOf(settings map[string]string) Slices {
	if settings[SettingConcurrentMode] == "none" {
		return SlicesOff
	}
	n, _ := strconv.Atoi(settings[SettingMaxSliceCount])
	return Slices(n)
}

// DynamicSettings are the index settings that converge on a live index, as the flat string
// values OpenSearch reports with flat_settings=true. A tuned slice setting, when given,
// replaces the spec's concurrent search settings.
func DynamicSettings(spec *v1alpha1.VectorIndexSpec, tunedSlices *Slices) map[string]string {
	s := map[string]string{
		"index.number_of_replicas": strconv.Itoa(int(spec.Replicas)),
		"index.refresh_interval":   spec.RefreshInterval,
		SettingConcurrentMode:      spec.Search.ConcurrentSegmentSearch.Mode,
		SettingMaxSliceCount:       strconv.Itoa(int(spec.Search.ConcurrentSegmentSearch.MaxSliceCount)),
	}
	if tunedSlices != nil {
		for k, v := range tunedSlices.Settings() {
			s[k] = v
		}
	}
	if ef := EfSearch(spec); ef != nil {
		s["index.knn.algo_param.ef_search"] = strconv.Itoa(int(*ef))
	}
	return s
}

// EfSearchInMapping says a field's ef_search is a mapping parameter, set when the index is
// created: faiss searches its graphs with the mapping's ef_search and ignores the index
// setting index.knn.algo_param.ef_search (measured on 3.6: recall@10 0.97 at setting 100
// and at 4; mapping 4 → 0.31, 300 → 1.0), and OpenSearch refuses a mapping change. lucene
// reads the index setting, which changes live.
func EfSearchInMapping(f v1alpha1.VectorField) bool {
	return f.Engine == "faiss" && f.Method.Name == "hnsw"
}

// LiveEfSearch is the ef_search a field of a live index is searched with: the mapping's
// for faiss (its default when unset), the index setting for lucene ("" when unset).
func LiveEfSearch(f v1alpha1.VectorField, properties map[string]json.RawMessage, settings map[string]string) string {
	if !EfSearchInMapping(f) {
		return settings["index.knn.algo_param.ef_search"]
	}
	var prop any
	_ = json.Unmarshal(properties[f.Name], &prop)
	m, _ := withKNNDefaults(prop).(map[string]any)
	method, _ := m["method"].(map[string]any)
	params, _ := method["parameters"].(map[string]any)
	if params["ef_search"] == nil {
		return ""
	}
	return fmt.Sprint(params["ef_search"])
}

// defaultFaissEfSearch is the ef_search of a faiss HNSW field whose mapping sets none (the
// k-NN plugin's METHOD_PARAMETER_EF_SEARCH default).
const defaultFaissEfSearch = 100

// EfSearch is the index-wide ef_search the spec asks for, nil when no field sets one.
// Admission guarantees all fields that set it agree. It is the index setting lucene fields
// search with; faiss fields carry theirs in the mapping (EfSearchInMapping).
func EfSearch(spec *v1alpha1.VectorIndexSpec) *int32 {
	for _, f := range spec.Fields {
		if p := f.Method.Parameters; p != nil && p.EfSearch != nil {
			return p.EfSearch
		}
	}
	return nil
}

// CreateSettings are all settings of a new index: the static ones and the dynamic ones.
func CreateSettings(spec *v1alpha1.VectorIndexSpec) map[string]any {
	s := map[string]any{
		"index.knn":              true,
		"index.number_of_shards": spec.Shards,
	}
	for k, v := range spec.AdditionalSettings {
		s[k] = v
	}
	for k, v := range DynamicSettings(spec, nil) {
		s[k] = v
	}
	return s
}

// SettingsDiff is the dynamic settings whose live value differs from the desired one: the
// body of one settings update, or nil when the index already matches.
func SettingsDiff(desired, live map[string]string) map[string]any {
	var diff map[string]any
	for k, want := range desired {
		if live[k] != want {
			if diff == nil {
				diff = map[string]any{}
			}
			diff[k] = want
		}
	}
	return diff
}

// remoteSnapshotWritable are the settings of ours OpenSearch lets a searchable snapshot
// (index.store.type remote_snapshot) change; its update-settings action refuses every
// other one ("remote index is read-only").
var remoteSnapshotWritable = []string{"index.number_of_replicas"}

// SplitRemoteSnapshot splits a settings diff for a searchable snapshot into what can be
// written and the keys that keep the snapshot's value, sorted.
func SplitRemoteSnapshot(diff map[string]any) (writable map[string]any, fixed []string) {
	for k, v := range diff {
		if slices.Contains(remoteSnapshotWritable, k) {
			if writable == nil {
				writable = map[string]any{}
			}
			writable[k] = v
			continue
		}
		fixed = append(fixed, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(fixed)
	return writable, fixed
}

// Storage is where a live index's data lives, from its settings.
func Storage(settings map[string]string) string {
	switch {
	case settings["index.store.type"] == "remote_snapshot":
		return v1alpha1.StorageRemoteSnapshot
	case settings["index.remote_store.enabled"] == "true":
		return v1alpha1.StorageRemoteStore
	default:
		return v1alpha1.StorageLocal
	}
}

// FieldMapping is the knn_vector mapping of one field; a trained field's is its model's.
func FieldMapping(f v1alpha1.VectorField) map[string]any {
	if f.Training != nil {
		return map[string]any{"type": "knn_vector", "model_id": f.Training.ModelID}
	}
	m := map[string]any{"type": "knn_vector", "dimension": f.Dimension, "method": methodMapping(f)}
	if f.DataType != "float" {
		m["data_type"] = f.DataType
	}
	if f.Mode != "in_memory" {
		m["mode"] = f.Mode
	}
	// on_disk without a compression level is 32x to OpenSearch: the spec's level is sent.
	if f.CompressionLevel != "1x" || f.Mode == "on_disk" {
		m["compression_level"] = f.CompressionLevel
	}
	return m
}

// methodMapping is a field's method as a mapping and the training API take it: its build
// parameters, and a faiss field's ef_search (see EfSearchInMapping).
func methodMapping(f v1alpha1.VectorField) map[string]any {
	method := map[string]any{"name": f.Method.Name, "engine": f.Engine, "space_type": f.SpaceType}
	params := map[string]any{}
	if p := f.Method.Parameters; p != nil {
		setIf(params, "m", p.M)
		setIf(params, "ef_construction", p.EfConstruction)
		setIf(params, "nlist", p.Nlist)
		setIf(params, "nprobes", p.Nprobes)
		if EfSearchInMapping(f) {
			setIf(params, "ef_search", p.EfSearch)
		}
	}
	if len(params) > 0 {
		method["parameters"] = params
	}
	return method
}

// TrainingRequest is the k-NN training API's body for a trained field's model: its method
// (with its parameters), dimension and sample, described as trained for owner.
func TrainingRequest(f v1alpha1.VectorField, owner Owner) map[string]any {
	body := map[string]any{
		"training_index": f.Training.Index, "training_field": f.Training.SampleField(f.Name),
		"dimension": f.Dimension, "method": methodMapping(f), "description": ModelDescription(owner),
	}
	if f.Training.MaxVectors != nil {
		body["max_training_vector_count"] = *f.Training.MaxVectors
	}
	return body
}

// ModelDescription marks a model as trained by the VectorIndex owner: its UID is what
// ModelTrainedBy reads back (a model has no _meta).
func ModelDescription(o Owner) string {
	return fmt.Sprintf("trained by vectorpilot for VectorIndex %s (uid %s)", o, o.UID)
}

// ModelTrainedBy says the model's description marks it as trained for the object of uid.
func ModelTrainedBy(description, uid string) bool {
	return uid != "" && strings.HasSuffix(description, "(uid "+uid+")")
}

// Nlist is the number of IVF buckets a field's model is trained with: its parameter, or
// the k-NN plugin's default.
func Nlist(f v1alpha1.VectorField) int32 {
	if p := f.Method.Parameters; p != nil && p.Nlist != nil {
		return *p.Nlist
	}
	return defaultNlist
}

// defaultNlist is the k-NN plugin's default nlist (METHOD_PARAMETER_NLIST_DEFAULT).
const defaultNlist = 4

func setIf(m map[string]any, key string, v *int32) {
	if v != nil {
		m[key] = *v
	}
}

// Properties are the mapping properties the spec declares: vector fields and extra ones.
func Properties(spec *v1alpha1.VectorIndexSpec) (map[string]any, error) {
	props := map[string]any{}
	names := make([]string, 0, len(spec.ExtraMappings))
	for name := range spec.ExtraMappings {
		names = append(names, name)
	}
	// "a" sorts before "a.b", so an object declared whole receives its dotted children.
	sort.Strings(names)
	for _, name := range names {
		var prop any
		if err := json.Unmarshal(spec.ExtraMappings[name].Raw, &prop); err != nil {
			return nil, fmt.Errorf("spec.extraMappings.%s: %w", name, err)
		}
		putProperty(props, name, prop)
	}
	for _, f := range spec.Fields {
		props[f.Name] = FieldMapping(f)
	}
	return props, nil
}

// putProperty places a mapping property under its name, a dotted name ("author.name") as
// the object path OpenSearch stores it under ({"author": {"properties": {"name": …}}}), so
// the declared mapping compares equal to the live one instead of looking missing forever.
func putProperty(props map[string]any, name string, prop any) {
	head, rest, dotted := strings.Cut(name, ".")
	if !dotted {
		props[name] = prop
		return
	}
	obj, _ := props[head].(map[string]any)
	if obj == nil {
		obj = map[string]any{}
		props[head] = obj
	}
	children, _ := obj["properties"].(map[string]any)
	if children == nil {
		children = map[string]any{}
		obj["properties"] = children
	}
	putProperty(children, rest, prop)
}

// MetaOf is the _meta that marks an index as owned by o.
func MetaOf(o Owner) map[string]any {
	return map[string]any{MetaOwner: o.String(), MetaUID: o.UID}
}

// MappingDiff is the comparison of the declared properties with a live mapping.
type MappingDiff struct {
	// Missing are declared properties the index lacks; they can be added.
	Missing map[string]any
	// Conflicts describe declared properties the index has with other, unchangeable values.
	Conflicts []string
	// Unapplied describe declared values an index created without them does not search
	// with, and cannot take until rebuilt: a faiss field's efSearch (EfSearchInMapping) on
	// an index whose mapping has no ef_search (created by OpenSearch's default, or by an
	// operator that sent only the index setting faiss ignores).
	Unapplied []string
}

// CompareMapping compares declared properties with an index's live ones. A live property
// matches when every declared key has the declared value; OpenSearch's defaults stand in
// for keys the live mapping leaves out, and keys only the live mapping has are ignored.
func CompareMapping(declared map[string]any, live map[string]json.RawMessage) (MappingDiff, error) {
	var d MappingDiff
	names := make([]string, 0, len(declared))
	for name := range declared {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		raw, ok := live[name]
		if !ok {
			if d.Missing == nil {
				d.Missing = map[string]any{}
			}
			d.Missing[name] = declared[name]
			continue
		}
		var liveProp any
		if err := json.Unmarshal(raw, &liveProp); err != nil {
			return d, fmt.Errorf("live mapping of %s: %w", name, err)
		}
		want, err := normalize(declared[name])
		if err != nil {
			return d, err
		}
		if unapplied := dropUnappliedEfSearch(name, want, liveProp); unapplied != "" {
			d.Unapplied = append(d.Unapplied, unapplied)
		}
		d.Conflicts = append(d.Conflicts, subsetDiffs(name, want, withKNNDefaults(liveProp))...)
	}
	return d, nil
}

// dropUnappliedEfSearch removes a declared ef_search from want when the live faiss field
// has none, and says so when the declared value is not the one it searches with.
func dropUnappliedEfSearch(name string, want, live any) string {
	params := func(prop any) (map[string]any, bool) {
		m, _ := prop.(map[string]any)
		method, _ := m["method"].(map[string]any)
		p, _ := method["parameters"].(map[string]any)
		return p, method["engine"] == "faiss"
	}
	declared, _ := params(want)
	liveParams, liveFaiss := params(live)
	ef, ok := declared["ef_search"]
	if _, set := liveParams["ef_search"]; !ok || !liveFaiss || set {
		return ""
	}
	delete(declared, "ef_search")
	if ef == float64(defaultFaissEfSearch) {
		return ""
	}
	return fmt.Sprintf("%s.method.parameters.ef_search: declared %v, but the index was created without it and searches with %d until rebuilt", name, ef, defaultFaissEfSearch)
}

// knnDefaults are the values OpenSearch leaves out of a knn_vector mapping; the compression
// level of an on_disk field without one is 32x (k-NN's on_disk default), not 1x.
var knnDefaults = map[string]any{"data_type": "float", "mode": "in_memory", "compression_level": "1x"}

func withKNNDefaults(prop any) any {
	m, ok := prop.(map[string]any)
	if !ok || m["type"] != "knn_vector" {
		return prop
	}
	// A faiss HNSW field created without ef_search (by OpenSearch's default, or by an
	// operator before faiss's ef_search went into the mapping) searches with 100.
	if method, _ := m["method"].(map[string]any); method != nil && method["engine"] == "faiss" && method["name"] == "hnsw" {
		params, _ := method["parameters"].(map[string]any)
		if params == nil {
			params = map[string]any{}
			method["parameters"] = params
		}
		if _, set := params["ef_search"]; !set {
			params["ef_search"] = float64(defaultFaissEfSearch)
		}
	}
	if _, set := m["compression_level"]; !set && m["mode"] == "on_disk" {
		m["compression_level"] = "32x"
	}
	for k, v := range knnDefaults {
		if _, set := m[k]; !set {
			m[k] = v
		}
	}
	return m
}

// normalize turns a Go value into its JSON-decoded form so numbers compare as float64.
func normalize(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(raw, &out)
}

// subsetDiffs lists the paths where want is not contained in got.
func subsetDiffs(path string, want, got any) []string {
	wm, wantMap := want.(map[string]any)
	if !wantMap {
		// OpenSearch echoes some enum values in its own case (data_type "BINARY").
		if !strings.EqualFold(fmt.Sprint(want), fmt.Sprint(got)) {
			return []string{fmt.Sprintf("%s: declared %v, index has %v", path, want, orNone(got))}
		}
		return nil
	}
	gm, _ := got.(map[string]any)
	keys := make([]string, 0, len(wm))
	for k := range wm {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, subsetDiffs(path+"."+k, wm[k], gm[k])...)
	}
	return out
}

func orNone(v any) any {
	if v == nil {
		return "nothing"
	}
	return v
}

// engineRetiredIn are engines OpenSearch no longer creates new indexes with, by the major
// that retired them: their indexes carried over by an upgrade stay searchable.
var engineRetiredIn = map[string]int{"nmslib": 3}

// VersionGated says whether OpenSearch's creating an index of the spec depends on the
// cluster's version (RefusedOn): only then does a create read the version first.
func VersionGated(spec *v1alpha1.VectorIndexSpec) bool {
	return slices.ContainsFunc(spec.Fields, func(f v1alpha1.VectorField) bool {
		_, retired := engineRetiredIn[f.Engine]
		return retired
	})
}

// RefusedOn is why OpenSearch of the given version refuses to create an index of the spec,
// for the rules admission cannot check because they depend on the cluster's version; nil
// when there is none (or the version cannot be read).
func RefusedOn(version string, spec *v1alpha1.VectorIndexSpec) error {
	major, err := strconv.Atoi(strings.SplitN(version, ".", 2)[0])
	if err != nil {
		return nil
	}
	for i, f := range spec.Fields {
		if since, ok := engineRetiredIn[f.Engine]; ok && major >= since {
			return fmt.Errorf("spec.fields[%d].engine: %s engine is deprecated in OpenSearch and cannot be used for new index creation (the cluster runs %s; retired in %d.0): use faiss or lucene",
				i, f.Engine, version, since)
		}
	}
	return nil
}
