# stampede as a container image: the image a distributed run's Indexed Job
# runs (stampede k8s --image ...), or `docker run` for a one-off run.
#
#   docker build -t registry.example.com/stampede:0.1 .
#   docker run --rm -v "$PWD:/work" -w /work registry.example.com/stampede:0.1 run plan.yaml
#
# Build stage: a static binary (no cgo, so no libc needed at run time).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/stampede ./cmd/stampede

# Run stage: nothing but the binary, CA certificates (https targets) and a
# non-root user (65532, "nonroot"). No shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/stampede /usr/local/bin/stampede
USER 65532:65532
WORKDIR /tmp
ENTRYPOINT ["/usr/local/bin/stampede"]
