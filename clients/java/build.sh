#!/usr/bin/env bash
# Builds the Java engine library and its demo engine with javac alone (JDK 17 or later, no dependencies).
#
#   clients/java/build.sh          compile into clients/java/build/classes (skipped when up to date)
#   clients/java/build.sh test     compile, then run the library's self-tests
#   clients/java/build.sh clean    remove clients/java/build
set -euo pipefail

here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
build="$here/build"
classes="$build/classes"
stamp="$build/.stamp"
javac_flags=(--release 17 -encoding UTF-8 -Xlint:all)

die() { echo "build.sh: $*" >&2; exit 1; }

case "${1:-}" in
    clean) rm -rf "$build"; exit 0 ;;
    test | "") ;;
    *) die "usage: build.sh [test|clean]" ;;
esac
command -v javac >/dev/null || die "javac not found: install a JDK 17 or later"

sources() { find "$here/src/main/java" "$here/src/demo/java" -name '*.java' | LC_ALL=C sort; }

# Up to date: the stamp is newer than every source and than this script.
if [[ -f "$stamp" && -z "$(find "$here/src/main" "$here/src/demo" "$here/build.sh" -newer "$stamp" -print -quit)" ]]; then
    echo "build.sh: up to date ($classes)" >&2
else
    began=$(date +%s%N)
    fresh="$build/.classes.tmp"
    rm -rf "$fresh"
    mkdir -p "$fresh"
    sources >"$build/.sources"
    # Into a fresh folder first: a failed build leaves the previous classes (or none), never half of them.
    javac "${javac_flags[@]}" -d "$fresh" @"$build/.sources" || { rm -rf "$fresh"; die "javac failed"; }
    rm -rf "$classes"
    mv "$fresh" "$classes"
    touch "$stamp"
    echo "build.sh: built $classes in $(( ($(date +%s%N) - began) / 1000000 )) ms" >&2
fi

if [[ "${1:-}" == test ]]; then
    tests="$build/test-classes"
    rm -rf "$tests"
    mkdir -p "$tests"
    javac "${javac_flags[@]}" -cp "$classes" -d "$tests" $(find "$here/src/test/java" -name '*.java') \
        || die "javac failed on the tests"
    java -ea -cp "$classes:$tests" ai.distill.engine.SelfTest
fi
