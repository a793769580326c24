// Package apps holds the built-in applications, registered from init
// functions in package mr's registry so that any binary that links this
// package can both submit them and run their tasks:
//
//   - wordcount <in>... <out>: counts whitespace-separated words.
//   - grep <in> <out> <regex> [<group>]: counts regular expression matches
//     and lists them, most frequent first (jobs grep-search and grep-sort).
//   - teragen <rows> <out>: writes GraySort input records (job teragen).
//   - terasort <in> <out>: sorts such records into a total order across
//     the part files (job terasort).
//   - teravalidate <in> <report>: checks the order of terasort's output and
//     sums its checksum (job teravalidate).
//   - terasum <in> <out>: the record count and checksum without the order
//     check (job terasum).
//   - sleep [-m maps] [-r reduces] [-mt ms] [-rt ms] [-o dir]: tasks that
//     only sleep, for scheduler and latency measurements (job sleep).
//
// The HiBench-style workloads (issue 11) add:
//
//   - randomtext <bytes> <out>: about <bytes> (an integer, with an optional
//     k, m, b or t suffix) of text lines "key<TAB>value" of random words
//     from a fixed 1000-word vocabulary, 5-10 words of key and 20-100 of
//     value, as HiBench's RandomTextWriter (job randomtext, map-only,
//     mapreduce.job.maps maps). Map i writes lines until it has written
//     bytes*(i+1)/maps - bytes*i/maps bytes (counting tabs and newlines;
//     so up to one line more), from a generator seeded by i: the output
//     depends only on <bytes> and the number of maps. Input for wordcount,
//     grep and sort.
//   - sort <in> <out>: sorts text lines (HiBench micro/sort) into one total
//     order across the part files: identity map and reduce over the lines
//     as keys, with terasort's sampler choosing the mapreduce.job.reduces
//     ranges from the lines (same mapreduce.terasort.* settings). The part
//     files, in name order, hold the input lines in byte order (job sort).
//   - dfsio -write|-read [-files N] [-size BYTES] <dir> <result>: Hadoop's
//     TestDFSIO (HiBench dfsioe). N maps (default 1), one per file, each
//     write or read <dir>/data/test_io_<i> of BYTES (default 1MB; suffixes
//     B, KB, MB, GB, TB are powers of 1024) through mr/fs (local paths,
//     file://, hdfs://); byte j of file i is (j + 7i) mod 251, which -read
//     checks, with the size. -write first deletes <dir>/data. One reduce
//     writes <result>/part-r-00000 as lines "<figure><TAB><value>": Test
//     (write or read), Number of files, Total MBytes processed, Total bytes
//     processed, Throughput mb/sec (total MB / sum of the maps' IO
//     seconds), Average IO rate mb/sec (mean of the maps' MB/s), IO rate
//     std deviation, Test exec time sec (first map's IO start to last
//     map's IO end); MB = 2^20 bytes. Counters dfsio/BYTES_WRITTEN,
//     BYTES_READ, FILES (job dfsio, named dfsio-write or dfsio-read).
//   - webgraph <pages> <out>: a random directed graph (HiBench
//     websearch/pagerank input) as lines "page<TAB>out1,out2,..." (a
//     dangling page's line is the page alone), pages numbered 0 to
//     <pages>-1. Page p's links depend only on p and <pages>: about one
//     page in ten is dangling, the others link to 1 to 8 distinct other
//     pages drawn as floor(pages*u^2), which skews in-degrees towards the
//     low numbers (job webgraph, map-only, mapreduce.job.maps maps).
//   - pagerank <graph> <out> <iterations>: PageRank over such a graph (any
//     page names without tabs or commas; every linked page needs a line):
//     a job counting the pages and dangling pages (pagerank-count), then
//     <iterations> jobs (pagerank-1, ...; each one's output, lines
//     "page<TAB>rank<TAB>links", the next one's input, in a temporary
//     directory beside <out>) with mapreduce.job.reduces reduces. Ranks
//     start at 1/N and sum to 1: rank' = 0.15/N + 0.85*(sum of rank/outdeg
//     over the in-links + D/N), where D, the rank held by the dangling
//     pages, is spread evenly over all pages (D is summed by the previous
//     job's reduces in the counter pagerank/DANGLING_RANK_E18, in units of
//     1e-18). The last job writes "page<TAB>rank" lines to <out>.
//   - kmeansgen <points> <k> <dims> <out>: <points> points (HiBench
//     ml/kmeans input), one line of <dims> comma-separated coordinates
//     (4 decimals) each: point i picks one of <k> centers (center j's
//     coordinates uniform in [-100, 100), seeded by j) with a generator
//     seeded by i and adds normal noise of standard deviation 5 to each
//     coordinate; the output depends only on the three numbers (job
//     kmeansgen, map-only, mapreduce.job.maps maps).
//   - kmeans <points> <out> <k> <iterations>: Lloyd's k-means, one job per
//     iteration (kmeans-1, ...; mapreduce.job.reduces reduces, a combiner
//     summing per cluster). The initial centers are the first <k> points of
//     the input (files by name, lines in order; empty lines are skipped);
//     each iteration assigns every point to its nearest center (squared
//     Euclidean distance, ties to the lower cluster number) and moves each
//     center to the mean of its points; a cluster with no points keeps its
//     center. The driver passes the centers to each job as a parameter and
//     reads them back from its output (in a temporary directory beside
//     <out>). <out> holds the last iteration's lines
//     "cluster<TAB>size<TAB>c1,c2,...": every cluster 0..k-1, its final
//     center and the number of points assigned to it in that iteration.
//
// The apps take the arguments of the Hadoop examples of the same names.
// Job definitions are registered under the names given in parentheses.
package apps
