#!/usr/bin/env python3
"""A/B of the direct solve between two tcsolve builds: `solve FILE --rhs random:16 --method direct
--device cpu --json` on every shared matrix; prints the rows where the second build used KLU or the
status differs (status, method, max backward error, seconds.solve of each).
usage: direct_engines_ab.py TCSOLVE_A TCSOLVE_B"""
import glob, json, subprocess, os, sys
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'shared', 'matrices')
rows=[]
files=sorted(glob.glob(ROOT+'/suitesparse/*.mtx')+glob.glob(ROOT+'/suitesparse/*.rsa')+glob.glob(ROOT+'/general/*.mtx')+glob.glob(ROOT+'/general/*.rua'))
for f in files:
  out=[]
  for b in sys.argv[1:3]:
    p=subprocess.run([b,'solve',f,'--rhs','random:16','--method','direct','--device','cpu','--json'],capture_output=True,text=True,timeout=300)
    try:
      j=json.loads(p.stdout); be=max(j.get('backward_errors') or [float('nan')]); out.append((j['status'],j.get('method'),be,j['seconds']['solve'],j.get('n',0)))
    except Exception as e:
      out.append(('ERR '+p.stderr.strip()[:80],'',float('nan'),0,0))
  if out[1][1] and 'klu' in out[1][1] or out[0][0]!=out[1][0]:
    print('%-34s %-10s %-26s be %.1e %.4fs | %-10s %-12s be %.1e %.4fs'%(os.path.basename(f),out[0][0][:10],out[0][1],out[0][2],out[0][3],out[1][0][:10],out[1][1],out[1][2],out[1][3]),flush=True)
