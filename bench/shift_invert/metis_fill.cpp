#include <cstdio>
#include "factor/sparse_factor.hpp"
#include "io/generators.hpp"
#include "io/matrix_io.hpp"
using namespace tcsolve;
int main(int argc,char**argv){
  for(int i=1;i<argc;++i){
    std::string a1=argv[i];
    Csr<double> a = a1.rfind("gen:",0)==0 ? generate(a1) : read_matrix(a1,{});
    SymbolicAnalysis s = analyze_factor(a,nullptr);
    FactorOptions o; o.engine=FactorEngine::cholmod;
    try{ auto f = factor_shifted(a,nullptr,0.0,o);
    printf("%-40s n=%7lld amd lnz %.3g fl %.3g an %.3fs | %s: lnz %.3g fl %.3g an %.3fs fac %.3fs metis_follows %d\n",argv[i],(long long)a.nrows,s.factor_entries,s.flops,s.seconds,f->describe().c_str(),f->factor_entries(),f->factor_flops(),f->analyze_seconds(),f->factor_seconds(),s.metis_follows);
    }catch(std::exception&e){printf("%s: %s\n",argv[i],e.what());}
  }
}
