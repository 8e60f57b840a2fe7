/* ONNX TfIdfVectorizer in modes IDF and TFIDF with weights (ONNX's node
 * tests are all TF): rows [2, 8] of ids, unigrams and skip bigrams,
 * against counts made here by brute force. */
#include "onnx_ops2_util.h"

enum { B = 2, LEN = 8, O = 5 };
static const int64_t k_pool[] = {3, 7, 3, 7, 7, 3, 4, 4}; /* unigrams 3, 7; bigrams (3,7) (7,3) (4,4) */
static const int64_t k_counts[] = {0, 2};
static const int64_t k_index[] = {4, 0, 1, 2, 3};
static const float k_w[O] = {0.5f, 2, 3, 0.25f, 1.5f};

/* occurrences of pool gram g in row x (unigrams once, bigrams per skip distance 1..3) */
static int count(const int32_t *x, int g) {
  int c = 0;
  if (g < 2) {
    for (int i = 0; i < LEN; i++) c += x[i] == k_pool[g];
    return c;
  }
  const int64_t *p = k_pool + 2 + 2 * (g - 2);
  for (int d = 1; d <= 3; d++)
    for (int i = 0; i + d < LEN; i++) c += x[i] == p[0] && x[i + d] == p[1];
  return c;
}

static void check_mode(const char *mode) {
  g_sname = "mode";
  g_sval = mode;
  g_fsname = "weights";
  g_fsvals = k_w;
  g_fsn = O;
  g_opset = 9;
  io in = {"X", ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 2, {B, LEN}};
  io out = {"Y", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, {B, O}};
  const char *names[6] = {"pool_int64s", "ngram_counts", "ngram_indexes", "min_gram_length", "max_gram_length", "max_skip_count"};
  const int64_t one[1] = {1}, two[1] = {2}, skip[1] = {2};
  const int64_t *vals[6] = {k_pool, k_counts, k_index, one, two, skip};
  int cnt[6] = {8, 2, 5, -1, -1, -1};
  size_t len;
  uint8_t *buf = model("TfIdfVectorizer", &in, 1, &out, names, vals, cnt, 6, &len);
  int32_t x[B * LEN] = {3, 7, 3, 4, 4, 7, 1, 3, 4, 4, 4, 7, 3, 3, 9, 7};
  float y[B * O];
  run(buf, len, &in, 1, (void *[]){x}, MIL_DT_FP32, y, B * O);
  bool idf = strcmp(mode, "IDF") == 0;
  for (int b = 0; b < B; b++)
    for (int g = 0; g < 5; g++) {
      int c = count(x + b * LEN, g);
      float want = (idf ? (c > 0) : c) * k_w[k_index[g]];
      assert_true(y[b * O + k_index[g]] == want);
    }
  free(buf);
  g_sname = g_sval = g_fsname = NULL;
  g_fsvals = NULL;
  g_fsn = 0;
  g_opset = 0;
}

static void test_idf(void **state) {
  (void)state;
  check_mode("IDF");
}

static void test_tfidf(void **state) {
  (void)state;
  check_mode("TFIDF");
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_idf), cmocka_unit_test(test_tfidf)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
