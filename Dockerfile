# The operator image: one static binary (manager and CLI) on a distroless base, non-root.
# CI's machines have no Docker engine: `make image` (test/cmd/image) and the end-to-end tests
# build this file's go build line and final stage with go-containerregistry instead.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY internal/ internal/
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/vectorpilot ./cmd/vectorpilot

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/vectorpilot /vectorpilot
USER 65532:65532
ENTRYPOINT ["/vectorpilot"]
CMD ["manager"]
