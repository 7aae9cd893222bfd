module github.com/recourse-dev/recourse/tools/image

go 1.26.0
