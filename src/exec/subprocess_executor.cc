#include "exec/subprocess_executor.h"
