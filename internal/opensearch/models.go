package opensearch

import (
	"context"
	"net/http"
	"net/url"
)

// Model is a k-NN model as the plugin reports it (GET /_plugins/_knn/models/<id>).
type Model struct {
	ID string `json:"model_id"`
	// State is training, created or failed.
	State       string `json:"state"`
	Error       string `json:"error"`
	Description string `json:"description"`
	Dimension   int    `json:"dimension"`
	SpaceType   string `json:"space_type"`
	Engine      string `json:"engine"`
}

// Model states the k-NN plugin reports.
const (
	ModelTraining = "training"
	ModelCreated  = "created"
	ModelFailed   = "failed"
)

func modelPath(id string) string { return "/_plugins/_knn/models/" + url.PathEscape(id) }

// GetModel reads a k-NN model; a missing one is a not-found error (IsNotFound).
func (c *Client) GetModel(ctx context.Context, id string) (Model, error) {
	var m Model
	err := c.do(ctx, http.MethodGet, modelPath(id)+"?filter_path=model_id,state,error,description,dimension,space_type,engine", nil, &m)
	return m, err
}

// TrainModel starts training a model with the k-NN training API; the body is the
// request's (training_index, training_field, dimension, method, …). Training runs on after
// the answer: GetModel follows it.
func (c *Client) TrainModel(ctx context.Context, id string, body map[string]any) error {
	return c.do(ctx, http.MethodPost, modelPath(id)+"/_train", body, nil)
}

// DeleteModel deletes a model; OpenSearch refuses while an index uses it. Deleting a
// missing model is not an error.
func (c *Client) DeleteModel(ctx context.Context, id string) error {
	err := c.do(ctx, http.MethodDelete, modelPath(id), nil, nil)
	if IsNotFound(err) {
		return nil
	}
	return err
}

// Count is the number of documents of an index that have the field.
func (c *Client) Count(ctx context.Context, index, field string) (int64, error) {
	var out struct {
		Hits struct {
			Total struct {
				Value int64 `json:"value"`
			} `json:"total"`
		} `json:"hits"`
	}
	body := map[string]any{"size": 0, "track_total_hits": true, "query": map[string]any{"exists": map[string]any{"field": field}}}
	err := c.do(ctx, http.MethodPost, "/"+url.PathEscape(index)+"/_search", body, &out)
	return out.Hits.Total.Value, err
}
