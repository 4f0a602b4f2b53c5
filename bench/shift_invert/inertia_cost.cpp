#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#include "factor/engine_rates.hpp"
#include "factor/sparse_factor.hpp"
#include "io/generators.hpp"
using namespace tcsolve;
static double now(){return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();}
int main(int argc,char**argv){
  const EngineRates& r = engine_rates();
  for (int i=1;i<argc;++i){
    Csr<double> a = generate(argv[i]);
    SymbolicAnalysis sym = analyze_factor(a,nullptr);
    double lower = (a.nnz()+a.nrows)/2.0;
    std::vector<double> t;
    for(int k=0;k<5;++k){double t0=now(); inertia_at(a,nullptr,0.37); t.push_back(now()-t0);}
    std::sort(t.begin(),t.end());
    printf("%-22s n=%8lld lnz=%.3g fl=%.3g  count %.3f ms  model %.3f ms (call %.3f an %.3f fac %.3f ratio %.2f)\n",argv[i],(long long)a.nrows,sym.factor_entries,sym.flops,t[2]*1e3,r.inertia_seconds(sym,lower)*1e3,r.inertia_call_s*1e3,r.analyze_seconds(lower)*1e3,r.factor_seconds(sym)*1e3,r.inertia_ratio);
  }
}
