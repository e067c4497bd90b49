#include <gtest/gtest.h>
TEST(Sharding, Placeholder) {}
